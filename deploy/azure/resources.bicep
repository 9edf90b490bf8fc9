// Everything slotlock needs inside its resource group. Parameters are
// described in main.bicep, which passes them through.

param location string
param tags object
param slotlockExists bool
param replicas int
param cpu string
param memory string
param terminationGracePeriodSeconds int
param logRetentionDays int
param deployRedis bool
param redisSku string
param redisHighAvailability bool
param redisPersistence bool
param redisNodes string
param redisAuth string
param redisTls bool
param redisUsername string
@secure()
param redisPassword string
param alertEmail string

var token = uniqueString(subscription().id, resourceGroup().id)
var appName = 'slotlock-${token}'
var httpPort = 8080 // http.addr in slotlock.yaml: /healthz, /readyz, /metrics

// The job configuration, MOUNTED (not baked into the image): slotlock.yaml
// beside this file becomes a Container Apps secret, mounted read-only as
// /etc/slotlock/config.yaml. Edit it and run `azd provision`.
var configYAML = loadTextContent('slotlock.yaml')

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
    workloadProfiles: [
      {
        name: 'Consumption'
        workloadProfileType: 'Consumption'
      }
    ]
  }
}

// ---- identity and image registry -------------------------------------------

// slotlock's identity: pulls the image and authenticates to Redis (Entra ID).
resource identity 'Microsoft.ManagedIdentity/userAssignedIdentities@2023-01-31' = {
  name: 'id-slotlock-${token}'
  location: location
  tags: tags
}

// azd pushes (or builds, remoteBuild) the image here.
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

// ---- the Redlock quorum: three independent Azure Managed Redis instances ----

module redis 'redis.bicep' = [for suffix in ['a', 'b', 'c']: if (deployRedis) {
  name: 'slotlock-redis-${suffix}'
  params: {
    name: 'redis-${token}-${suffix}'
    location: location
    tags: tags
    sku: redisSku
    highAvailability: redisHighAvailability
    persistence: redisPersistence
    principalId: identity.properties.principalId
  }
}]

var deployedNodes = '${redis[0]!.outputs.address},${redis[1]!.outputs.address},${redis[2]!.outputs.address}'
var nodes = deployRedis ? deployedNodes : redisNodes

// ---- the app -------------------------------------------------------------------

// Before the first `azd deploy` the registry holds no slotlock image: the app
// starts on a public placeholder (without probes, which it could not pass).
// Later provisions keep whatever image azd deployed.
module current 'fetch-image.bicep' = {
  name: 'slotlock-current-image'
  params: {
    exists: slotlockExists
    name: appName
  }
}

var placeholder = 'mcr.microsoft.com/k8se/quickstart:latest'
var image = slotlockExists && !empty(current.outputs.image) ? current.outputs.image : placeholder
var realImage = image != placeholder

var probes = [
  {
    // Up to 60 s to load the config, get a first Entra token and reach Redis.
    type: 'Startup'
    httpGet: {
      path: '/healthz'
      port: httpPort
    }
    periodSeconds: 2
    timeoutSeconds: 2
    failureThreshold: 30
  }
  {
    // Restart a replica whose scheduler loop is dead or stuck.
    type: 'Liveness'
    httpGet: {
      path: '/healthz'
      port: httpPort
    }
    periodSeconds: 10
    timeoutSeconds: 2
    failureThreshold: 3
  }
  {
    // Ready = can run slots (a Redis majority answers). A rolling revision
    // change waits for the new replicas to be ready before stopping old ones.
    type: 'Readiness'
    httpGet: {
      path: '/readyz'
      port: httpPort
    }
    periodSeconds: 5
    timeoutSeconds: 2
    failureThreshold: 3
  }
]

var configSecrets = [
  {
    name: 'slotlock-config'
    value: configYAML
  }
  {
    name: 'redis-nodes'
    value: nodes
  }
]
var passwordSecrets = [
  {
    name: 'redis-password'
    value: redisPassword
  }
]
var secrets = redisAuth == 'password' ? concat(configSecrets, passwordSecrets) : configSecrets

var entraEnv = [
  {
    name: 'SLOTLOCK_REDIS__AUTH'
    value: 'entra'
  }
  {
    name: 'SLOTLOCK_REDIS__ENTRA_CLIENT_ID'
    value: identity.properties.clientId
  }
]
var passwordEnv = [
  {
    name: 'SLOTLOCK_REDIS__AUTH'
    value: 'password'
  }
  {
    name: 'SLOTLOCK_REDIS__PASSWORD'
    secretRef: 'redis-password'
  }
]
var usernameEnv = empty(redisUsername) ? [] : [
  {
    name: 'SLOTLOCK_REDIS__USERNAME'
    value: redisUsername
  }
]
var authEnv = redisAuth == 'entra' ? entraEnv : concat(passwordEnv, usernameEnv)

var baseEnv = [
  {
    name: 'SLOTLOCK_CONFIG'
    value: '/etc/slotlock/config.yaml'
  }
  {
    name: 'SLOTLOCK_REDIS__NODES'
    secretRef: 'redis-nodes'
  }
  {
    name: 'SLOTLOCK_REDIS__TLS'
    value: (deployRedis || redisTls) ? 'true' : 'false'
  }
  // A changed slotlock.yaml changes this value, hence the revision template,
  // so Container Apps rolls out a new revision that reads it (a changed
  // secret alone restarts nothing). No SLOTLOCK_ prefix: every SLOTLOCK_*
  // variable is a configuration key.
  {
    name: 'CONFIG_REVISION'
    value: uniqueString(configYAML)
  }
  // SLOTLOCK_REPLICA defaults to CONTAINER_APP_REPLICA_NAME, which
  // Container Apps sets per replica.
]
var env = concat(baseEnv, authEnv)

// azd deploys the image to the resource tagged with the service name.
var appTags = union(tags, {
  'azd-service-name': 'slotlock'
})

resource app 'Microsoft.App/containerApps@2024-03-01' = {
  name: appName
  location: location
  tags: appTags
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${identity.id}': {}
    }
  }
  properties: {
    managedEnvironmentId: cae.id
    workloadProfileName: 'Consumption'
    configuration: {
      // One active revision: a new revision replaces the old one replica by
      // replica; both run for a while, and the locks keep every slot single.
      activeRevisionsMode: 'Single'
      registries: [
        {
          server: registry.properties.loginServer
          identity: identity.id
        }
      ]
      secrets: secrets
      // No ingress: slotlock serves no traffic. Probes reach the container
      // port directly.
    }
    template: {
      terminationGracePeriodSeconds: terminationGracePeriodSeconds
      containers: [
        {
          name: 'slotlock'
          image: image
          resources: {
            cpu: json(cpu)
            memory: memory
          }
          env: env
          probes: realImage ? probes : []
          volumeMounts: [
            {
              volumeName: 'config'
              mountPath: '/etc/slotlock'
            }
          ]
        }
      ]
      volumes: [
        {
          name: 'config'
          storageType: 'Secret'
          secrets: [
            {
              secretRef: 'slotlock-config'
              path: 'config.yaml'
            }
          ]
        }
      ]
      scale: {
        minReplicas: replicas
        maxReplicas: replicas
      }
    }
  }
  dependsOn: [
    acrPull // the identity must be allowed to pull before a revision starts
  ]
}

output registryEndpoint string = registry.properties.loginServer
output appName string = app.name
output identityClientId string = identity.properties.clientId
output logAnalyticsWorkspaceId string = logs.properties.customerId
output redisHosts string = deployRedis ? nodes : ''
