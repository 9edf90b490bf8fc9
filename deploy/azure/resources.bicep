// Everything slotlock needs inside its resource group, except the app
// itself: `azd deploy` creates and updates that from slotlock.bicep, with the
// image it has just built, so no placeholder image ever runs. Parameters are
// described in main.bicep, which passes them through.

param location string
param tags object
param logRetentionDays int
param privateNetwork bool
param vnetAddressPrefix string
param zoneRedundant bool
param deployRedis bool
param redisSku string
param redisHighAvailability bool
param redisPersistence bool
@allowed([
  3
  5
])
param redisNodeCount int
param redisAuth string
param redisTls bool
param principalId string
param alertEmail string

var token = uniqueString(subscription().id, resourceGroup().id)

// ---- observability -----------------------------------------------------------

// Container Apps sends each replica's stdout/stderr here, one row per line, in
// ContainerAppConsoleLogs_CL (slotlock's JSON audit events are in Log_s).
resource logs 'Microsoft.OperationalInsights/workspaces@2023-09-01' = {
  name: 'log-${token}'
  location: location
  tags: tags
  properties: {
    sku: {
      name: 'PerGB2018'
    }
    retentionInDays: logRetentionDays
  }
}

// Log alert rules over the audit log (alerts.bicep, alerts/*.kql).
module alerts 'alerts.bicep' = {
  name: 'slotlock-alerts'
  params: {
    location: location
    tags: tags
    workspaceId: logs.id
    alertEmail: alertEmail
  }
}

// ---- network (private mode) ------------------------------------------------------

module network 'network.bicep' = if (privateNetwork) {
  name: 'slotlock-network'
  params: {
    location: location
    tags: tags
    name: 'vnet-${token}'
    addressPrefix: vnetAddressPrefix
  }
}

resource cae 'Microsoft.App/managedEnvironments@2024-03-01' = {
  name: 'cae-${token}'
  location: location
  tags: tags
  properties: {
    appLogsConfiguration: {
      destination: 'log-analytics'
      logAnalyticsConfiguration: {
        customerId: logs.properties.customerId
        sharedKey: logs.listKeys().primarySharedKey
      }
    }
    // Private mode: the environment lives in the virtual network (internal:
    // no public ingress address; the app has no ingress anyway) and reaches
    // Redis through the private endpoints. Fixed at creation: an existing
    // environment cannot move into or out of a network.
    vnetConfiguration: privateNetwork ? {
      infrastructureSubnetId: network!.outputs.appsSubnetId
      internal: true
    } : null
    // Spreads replicas over the region's availability zones; needs the
    // virtual network, so it is ignored in public mode.
    zoneRedundant: privateNetwork && zoneRedundant
    workloadProfiles: [
      {
        name: 'Consumption'
        workloadProfileType: 'Consumption'
      }
    ]
  }
}

// ---- identity and image registry -------------------------------------------

// slotlock's identity: pulls the image, authenticates to Redis (Entra ID),
// reads the Redis password from Key Vault (password mode). Only the real
// slotlock image ever runs with it (slotlock.bicep).
resource identity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: 'id-slotlock-${token}'
  location: location
  tags: tags
}

// azd has the image built here (remoteBuild) and pushed.
resource registry 'Microsoft.ContainerRegistry/registries@2023-07-01' = {
  name: 'cr${token}'
  location: location
  tags: tags
  sku: {
    name: 'Basic'
  }
  properties: {
    adminUserEnabled: false
  }
}

var acrPullRole = subscriptionResourceId('Microsoft.Authorization/roleDefinitions', '7f951dda-4ed3-4680-a7ca-43fe172d538d')

resource acrPull 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(registry.id, identity.id, acrPullRole)
  scope: registry
  properties: {
    roleDefinitionId: acrPullRole
    principalId: identity.properties.principalId
    principalType: 'ServicePrincipal'
  }
}

// ---- the Redlock quorum: redisNodeCount (3 or 5) independent Azure Managed Redis instances ----

module redis 'redis.bicep' = [for suffix in take(['a', 'b', 'c', 'd', 'e'], redisNodeCount): if (deployRedis) {
  name: 'slotlock-redis-${suffix}'
  params: {
    name: 'redis-${token}-${suffix}'
    location: location
    tags: tags
    sku: redisSku
    highAvailability: redisHighAvailability
    persistence: redisPersistence
    principalId: identity.properties.principalId
    privateEndpointSubnetId: privateNetwork ? network!.outputs.privateEndpointSubnetId : ''
    privateDnsZoneId: privateNetwork ? network!.outputs.redisDnsZoneId : ''
  }
}]

// ---- password mode (your own nodes): the password lives in Key Vault -------

var passwordMode = !deployRedis && redisAuth == 'password'

module vault 'keyvault.bicep' = if (passwordMode) {
  name: 'slotlock-keyvault'
  params: {
    location: location
    tags: tags
    name: 'kv-${token}'
    appPrincipalId: identity.properties.principalId
    adminPrincipalId: principalId
  }
}

output appName string = 'slotlock-${token}'
output environmentId string = cae.id
output registryEndpoint string = registry.properties.loginServer
output identityId string = identity.id
output identityClientId string = identity.properties.clientId
output logAnalyticsWorkspaceId string = logs.properties.customerId
// host:port of every deployed instance, in the loop's order (none when
// deployRedis is false); main.bicep joins them into the app's node list. An
// output loop: a variable's loop cannot read module outputs, and map() cannot
// index a module collection with its lambda variable (BCP247).
output deployedNodes array = [for i in range(0, deployRedis ? redisNodeCount : 0): redis[i]!.outputs.address]
output redisAuth string = deployRedis ? 'entra' : redisAuth
output redisTls bool = deployRedis || redisTls
output keyVaultName string = passwordMode ? vault!.outputs.name : ''
output redisPasswordSecretUri string = passwordMode ? vault!.outputs.passwordSecretUri : ''
