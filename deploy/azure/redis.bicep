// One Azure Managed Redis instance of the Redlock quorum: a cluster with one
// TLS database on port 10000 that accepts only Microsoft Entra ID tokens,
// and an access policy assignment that lets the slotlock identity in. In
// private mode (privateEndpointSubnetId set) the instance refuses public
// traffic and is reached through a private endpoint in the virtual network,
// its name resolved by the private DNS zone privatelink.redis.azure.net.
//
// API 2025-07-01: the first GA version with publicNetworkAccess on the
// cluster (required from this version on). Azure Managed Redis has no IP
// firewall rules (Azure Cache for Redis has; redisEnterprise does not): the
// private endpoint is the network control.

@description('Name of the Azure Managed Redis cluster.')
param name string

@description('Azure region.')
param location string

@description('Tags for the cluster.')
param tags object

@description('Azure Managed Redis SKU, e.g. Balanced_B0.')
param sku string

@description('Replicate the instance within itself (primary and replica; the replication is asynchronous).')
param highAvailability bool

@description('Append-only-file persistence every second.')
param persistence bool

@description('Object (principal) id of the managed identity that slotlock authenticates as.')
param principalId string

@description('Subnet for the private endpoint; empty: public mode (TLS + Entra ID only, reachable from the internet).')
param privateEndpointSubnetId string = ''

@description('Resource id of the privatelink.redis.azure.net zone linked to the virtual network (private mode).')
param privateDnsZoneId string = ''

var port = 10000
var private = !empty(privateEndpointSubnetId)

resource cluster 'Microsoft.Cache/redisEnterprise@2025-07-01' = {
  name: name
  location: location
  tags: tags
  sku: {
    name: sku
  }
  properties: {
    minimumTlsVersion: '1.2'
    highAvailability: highAvailability ? 'Enabled' : 'Disabled'
    publicNetworkAccess: private ? 'Disabled' : 'Enabled'
  }
}

resource database 'Microsoft.Cache/redisEnterprise/databases@2025-07-01' = {
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
resource access 'Microsoft.Cache/redisEnterprise/databases/accessPolicyAssignments@2025-07-01' = {
  parent: database
  name: 'slotlock' // [A-Za-z0-9]{1,60}
  properties: {
    accessPolicyName: 'default' // the only policy offered: full data access
    user: {
      objectId: principalId
    }
  }
}

// ---- private mode ------------------------------------------------------------

resource endpoint 'Microsoft.Network/privateEndpoints@2024-05-01' = if (private) {
  name: 'pe-${name}'
  location: location
  tags: tags
  properties: {
    subnet: {
      id: privateEndpointSubnetId
    }
    privateLinkServiceConnections: [
      {
        name: name
        properties: {
          privateLinkServiceId: cluster.id
          groupIds: [
            'redisEnterprise'
          ]
        }
      }
    ]
  }
}

// Registers the endpoint's address as <name>.<region>.redis.azure.net in the
// private zone, so the app keeps using the public host name (and its TLS
// certificate) and reaches the private address.
resource dns 'Microsoft.Network/privateEndpoints/privateDnsZoneGroups@2024-05-01' = if (private) {
  parent: endpoint
  name: 'default'
  properties: {
    privateDnsZoneConfigs: [
      {
        name: 'redis'
        properties: {
          privateDnsZoneId: privateDnsZoneId
        }
      }
    ]
  }
}

@description('host:port of the database endpoint.')
output address string = '${cluster.properties.hostName}:${port}'
