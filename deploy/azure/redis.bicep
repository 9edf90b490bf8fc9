// One Azure Managed Redis instance of the Redlock quorum: a cluster with one
// TLS database on port 10000 that accepts only Microsoft Entra ID tokens,
// and an access policy assignment that lets the slotlock identity in.

@description('Name of the Azure Managed Redis cluster.')
param name string

@description('Azure region.')
param location string

@description('Tags for the cluster.')
param tags object

@description('Azure Managed Redis SKU, e.g. Balanced_B0.')
param sku string

@description('Replicate the instance within itself.')
param highAvailability bool

@description('Append-only-file persistence every second.')
param persistence bool

@description('Object (principal) id of the managed identity that slotlock authenticates as.')
param principalId string

var port = 10000

resource cluster 'Microsoft.Cache/redisEnterprise@2025-04-01' = {
  name: name
  location: location
  tags: tags
  sku: {
    name: sku
  }
  properties: {
    minimumTlsVersion: '1.2'
    highAvailability: highAvailability ? 'Enabled' : 'Disabled'
  }
}

resource database 'Microsoft.Cache/redisEnterprise/databases@2025-04-01' = {
  parent: cluster
  name: 'default' // the only database name Azure Managed Redis accepts
  properties: {
    clientProtocol: 'Encrypted' // TLS only
    port: port
    // One endpoint that speaks the plain (non-cluster) protocol: slotlock
    // talks to each instance as a standalone Redis, and its keys of one job
    // share a hash tag anyway.
    clusteringPolicy: 'EnterpriseCluster'
    // Never evict a lock or a fencing counter to make room: a full instance
    // must refuse writes (that node then counts as down), not drop locks.
    evictionPolicy: 'NoEviction'
    // Entra ID only: no access keys to leak or rotate.
    accessKeysAuthentication: 'Disabled'
    persistence: persistence ? {
      aofEnabled: true
      aofFrequency: '1s'
    } : {
      aofEnabled: false
      rdbEnabled: false
    }
  }
}

// The Redis user is the identity's object id; its password is an Entra token
// for https://redis.azure.com/.default (locking/entraauth).
resource access 'Microsoft.Cache/redisEnterprise/databases/accessPolicyAssignments@2025-04-01' = {
  parent: database
  name: 'slotlock' // [A-Za-z0-9]{1,60}
  properties: {
    accessPolicyName: 'default' // the only policy offered: full data access
    user: {
      objectId: principalId
    }
  }
}

@description('host:port of the database endpoint.')
output address string = '${cluster.properties.hostName}:${port}'
