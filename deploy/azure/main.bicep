// slotlock on Azure Container Apps: the entry point azd deploys
// (`cd deploy/azure && azd up`). It creates one resource group and puts
// everything in it (resources.bicep). Each value a reader must choose is a
// parameter below; azd fills them from main.parameters.json, i.e. from
// `azd env set NAME VALUE` (the names are given in each description).
targetScope = 'subscription'

@minLength(1)
@maxLength(64)
@description('Name of the azd environment (azd sets it from `azd env new`/`azd up`). Names the resource group rg-<name> and tags every resource.')
param environmentName string

@minLength(1)
@description('Azure region of every resource (azd asks on the first run). Pick one that offers Azure Managed Redis and Container Apps with availability zones.')
param location string

@description('Set by azd (SERVICE_SLOTLOCK_RESOURCE_EXISTS): true once the app exists, so a re-provision keeps the deployed image instead of the placeholder.')
param slotlockExists bool = false

@minValue(1)
@maxValue(30)
@description('Number of slotlock replicas (SLOTLOCK_REPLICAS). minReplicas = maxReplicas = this: a cron never scales to zero and needs no autoscaling; every replica runs every job, each slot runs once.')
param replicas int = 3

@description('CPU cores per replica, as a string (Consumption profile pairs: 0.25/0.5Gi, 0.5/1Gi, 1/2Gi, ...).')
param cpu string = '0.25'

@description('Memory per replica, matching cpu (e.g. 0.5Gi for 0.25 cores).')
param memory string = '0.5Gi'

@minValue(1)
@maxValue(600)
@description('Seconds Container Apps waits after SIGTERM before SIGKILL. Must exceed shutdown.grace in slotlock.yaml (25s) so running jobs finish or cancel cleanly and leases are released.')
param terminationGracePeriodSeconds int = 40

@minValue(30)
@maxValue(730)
@description('Log Analytics retention in days for the audit trail (ContainerAppConsoleLogs_CL).')
param logRetentionDays int = 30

@description('SLOTLOCK_DEPLOY_REDIS. true: create three independent Azure Managed Redis instances (TLS, port 10000, Entra ID auth for the app identity) as the Redlock quorum. false: use your own nodes from redisNodes.')
param deployRedis bool = true

@description('SLOTLOCK_REDIS_SKU: Azure Managed Redis SKU of each of the three instances. Locks need little memory: the smallest Balanced SKU is plenty.')
param redisSku string = 'Balanced_B0'

@description('Replicate each Azure Managed Redis instance within itself (an SLA, and no data loss when a node fails over). Redlock already tolerates losing one of the three instances; high availability makes that rarer.')
param redisHighAvailability bool = true

@description('SLOTLOCK_REDIS_PERSISTENCE: append-only-file persistence (written every second; "always" is deprecated by Azure) on each Azure Managed Redis instance, so a restarted instance comes back with its locks and fencing counters. On by default: an instance that restarts empty can join a majority with a node that missed the last write, and then two replicas can hold one slot and a fencing token can go backwards (README, "Locking: Limits"). Turn it off only for throwaway environments.')
param redisPersistence bool = true

@description('SLOTLOCK_REDIS_NODES, used only when deployRedis is false: comma-separated host:port of your independent Redis nodes (an odd number, 3 or 5).')
param redisNodes string = ''

@allowed([
  'entra'
  'password'
])
@description('SLOTLOCK_REDIS_AUTH, used only when deployRedis is false (the deployed instances always use entra): "entra" authenticates with tokens of the app identity (give it an access policy on each node yourself), "password" with redisUsername/redisPassword.')
param redisAuth string = 'entra'

@description('SLOTLOCK_REDIS_TLS, used only when deployRedis is false: whether your nodes speak TLS (Azure Cache for Redis: yes, port 6380). The deployed instances always do.')
param redisTls bool = true

@description('SLOTLOCK_REDIS_USERNAME, password auth only: the ACL user on your nodes ("" for the default user).')
param redisUsername string = ''

@secure()
@description('SLOTLOCK_REDIS_PASSWORD, password auth only: the password shared by your nodes. Stored as a Container Apps secret.')
param redisPassword string = ''

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
    slotlockExists: slotlockExists
    replicas: replicas
    cpu: cpu
    memory: memory
    terminationGracePeriodSeconds: terminationGracePeriodSeconds
    logRetentionDays: logRetentionDays
    deployRedis: deployRedis
    redisSku: redisSku
    redisHighAvailability: redisHighAvailability
    redisPersistence: redisPersistence
    redisNodes: redisNodes
    redisAuth: deployRedis ? 'entra' : redisAuth
    redisTls: redisTls
    redisUsername: redisUsername
    redisPassword: redisPassword
    alertEmail: alertEmail
  }
}

// azd reads these outputs into the environment (.azure/<env>/.env).
output AZURE_LOCATION string = location
output AZURE_RESOURCE_GROUP string = rg.name
output AZURE_CONTAINER_REGISTRY_ENDPOINT string = resources.outputs.registryEndpoint
output SLOTLOCK_APP_NAME string = resources.outputs.appName
output SLOTLOCK_IDENTITY_CLIENT_ID string = resources.outputs.identityClientId
output SLOTLOCK_LOG_ANALYTICS_WORKSPACE_ID string = resources.outputs.logAnalyticsWorkspaceId
output SLOTLOCK_REDIS_HOSTS string = resources.outputs.redisHosts
