// slotlock on Azure Container Apps: what `azd provision` creates
// (`cd deploy/azure && azd up` runs provision, then deploy). It creates one
// resource group and puts everything in it (resources.bicep) except the app,
// which `azd deploy` creates from slotlock.bicep with the image it has just
// built. Each value a reader must choose is a parameter below; azd fills them
// from main.parameters.json, i.e. from `azd env set NAME VALUE` (the names
// are given in each description).
targetScope = 'subscription'

@minLength(1)
@maxLength(64)
@description('Name of the azd environment (azd sets it from `azd env new`/`azd up`). Names the resource group rg-<name> and tags every resource.')
param environmentName string

@minLength(1)
@description('Azure region of every resource (azd asks on the first run). Pick one that offers Azure Managed Redis and Container Apps with availability zones.')
param location string

@minValue(30)
@maxValue(730)
@description('Log Analytics retention in days for the audit trail (ContainerAppConsoleLogs_CL).')
param logRetentionDays int = 30

@description('SLOTLOCK_DEPLOY_REDIS. true: create redisNodeCount independent Azure Managed Redis instances (TLS, port 10000, Entra ID auth for the app identity) as the Redlock quorum. false: use your own nodes from redisNodes.')
param deployRedis bool = true

@allowed([
  3
  5
])
@description('SLOTLOCK_REDIS_NODE_COUNT, used only when deployRedis is true: how many independent Azure Managed Redis instances form the Redlock quorum, and the app gets every one of them. 3 tolerates one instance lost (down, or failed over without its latest writes) at a time; 5 tolerates two, at 5/3 of the cost.')
param redisNodeCount int = 3

@description('SLOTLOCK_REDIS_SKU: Azure Managed Redis SKU of each instance. Locks need little memory: the smallest Balanced SKU is plenty.')
param redisSku string = 'Balanced_B0'

@description('Replicate each Azure Managed Redis instance within itself (a primary and a replica node, placed by the service). The replication is ASYNCHRONOUS: a failover, planned (maintenance) or not, can lose writes the primary had acknowledged, so an instance can come back without a claim or a fencing-counter step (README, "Deploy to Azure Container Apps", failover). It shortens outages; it does not make an instance durable, and persistence does not cover a failover either. Redlock tolerates a minority of the instances losing data at a time: one of three, two of five.')
param redisHighAvailability bool = true

@description('SLOTLOCK_REDIS_PERSISTENCE: append-only-file persistence (written every second; "always" is deprecated by Azure) on each Azure Managed Redis instance, so an instance that restarts as a whole comes back with its locks and fencing counters. It does not cover a failover to the replica (asynchronous replication: the replica may miss the last writes). Turn it off only for throwaway environments.')
param redisPersistence bool = true

@description('SLOTLOCK_PRIVATE_NETWORK. true (the default for new environments): the Container Apps environment joins a new virtual network, each Redis instance takes publicNetworkAccess Disabled and a private endpoint, and the private DNS zone privatelink.redis.azure.net resolves their names inside the network. false: public mode, every Redis instance reachable from the internet (TLS and Entra ID still required). An existing environment cannot change mode in place.')
param privateNetwork bool = true

@description('SLOTLOCK_VNET_ADDRESS_PREFIX, private mode: the virtual network\'s address space (a /16 to /22; the environment takes its first /23, the private endpoints the /24 after it). Pick one that does not overlap networks you will peer with.')
param vnetAddressPrefix string = '10.42.0.0/16'

@description('SLOTLOCK_ZONE_REDUNDANT, private mode only: spread the Container Apps replicas over the region\'s availability zones (the region must have them). Fixed at the environment\'s creation.')
param zoneRedundant bool = false

@description('SLOTLOCK_REDIS_NODES, used only when deployRedis is false: comma-separated host:port of your independent Redis nodes (an odd number, 3 or 5).')
param redisNodes string = ''

@allowed([
  'entra'
  'password'
])
@description('SLOTLOCK_REDIS_AUTH, used only when deployRedis is false (the deployed instances always use entra): "entra" authenticates with tokens of the app identity (give it an access policy on each node yourself), "password" with a password the app reads from a Key Vault this template creates (you store it there; it never passes through azd).')
param redisAuth string = 'entra'

@description('SLOTLOCK_REDIS_TLS, used only when deployRedis is false: whether your nodes speak TLS (Azure Cache for Redis: yes, port 6380). The deployed instances always do.')
param redisTls bool = true

@description('Set by azd (AZURE_PRINCIPAL_ID): whoever runs azd. Password mode only: gets Key Vault Secrets Officer on the vault, to store the Redis password.')
param principalId string = ''

@description('SLOTLOCK_ALERT_EMAIL: an e-mail address for the log alert rules (alerts.bicep) to notify; empty: the alerts fire in the portal (Monitor → Alerts) only.')
param alertEmail string = ''

var tags = { 'azd-env-name': environmentName }

resource rg 'Microsoft.Resources/resourceGroups@2024-03-01' = {
  name: 'rg-${environmentName}'
  location: location
  tags: tags
}

module resources 'resources.bicep' = {
  name: 'slotlock-resources'
  scope: rg
  params: {
    location: location
    tags: tags
    logRetentionDays: logRetentionDays
    privateNetwork: privateNetwork
    vnetAddressPrefix: vnetAddressPrefix
    zoneRedundant: zoneRedundant
    deployRedis: deployRedis
    redisSku: redisSku
    redisHighAvailability: redisHighAvailability
    redisPersistence: redisPersistence
    redisNodeCount: redisNodeCount
    redisAuth: deployRedis ? 'entra' : redisAuth
    redisTls: redisTls
    principalId: principalId
    alertEmail: alertEmail
  }
}

// azd reads these outputs into the environment (.azure/<env>/.env);
// slotlock.parameters.json hands them to slotlock.bicep at `azd deploy`.
// None is a secret: the password mode's output is the secret's URI.
output AZURE_LOCATION string = location
output AZURE_RESOURCE_GROUP string = rg.name
output AZURE_CONTAINER_REGISTRY_ENDPOINT string = resources.outputs.registryEndpoint
output SLOTLOCK_APP_NAME string = resources.outputs.appName
output SLOTLOCK_ENVIRONMENT_ID string = resources.outputs.environmentId
output SLOTLOCK_IDENTITY_ID string = resources.outputs.identityId
output SLOTLOCK_IDENTITY_CLIENT_ID string = resources.outputs.identityClientId
output SLOTLOCK_LOG_ANALYTICS_WORKSPACE_ID string = resources.outputs.logAnalyticsWorkspaceId
output SLOTLOCK_NODES string = deployRedis ? join(resources.outputs.deployedNodes, ',') : redisNodes
output SLOTLOCK_AUTH_MODE string = resources.outputs.redisAuth
output SLOTLOCK_TLS_MODE string = resources.outputs.redisTls ? 'true' : 'false'
output SLOTLOCK_KEY_VAULT_NAME string = resources.outputs.keyVaultName
output SLOTLOCK_REDIS_PASSWORD_SECRET_URI string = resources.outputs.redisPasswordSecretUri
