// The slotlock container app. Not part of `azd provision`: `azd deploy`
// builds the image, then deploys this file into the resource group (azd finds
// it by the service's name: slotlock.bicep + slotlock.parameters.json beside
// azure.yaml's infra path; azd 1.20.0 and later), with the image it has just
// pushed. So the app is created on its first deploy, already running the real
// image: there is no placeholder image, and nothing but slotlock ever runs
// with the identity that reaches Redis or with the Redis settings.
//
// Every parameter is a string: in this path azd substitutes its environment
// into slotlock.parameters.json and passes the values as they are, so the
// numbers and flags are converted here.

@description('The image azd has just built and pushed (SERVICE_SLOTLOCK_IMAGE_NAME).')
@minLength(1)
param imageName string

@description('Container app name (SLOTLOCK_APP_NAME, from provision).')
param appName string

param location string

@description('azd environment name, for the tags.')
param environmentName string

@description('Container Apps environment id (SLOTLOCK_ENVIRONMENT_ID).')
param environmentId string

@description('Resource id of the app\'s user-assigned identity (SLOTLOCK_IDENTITY_ID).')
param identityId string

@description('Its client id (SLOTLOCK_IDENTITY_CLIENT_ID), for Entra ID tokens.')
param identityClientId string

@description('Login server of the registry azd pushed to (AZURE_CONTAINER_REGISTRY_ENDPOINT).')
param registryEndpoint string

@description('Comma-separated host:port of the Redis nodes (SLOTLOCK_NODES).')
param redisNodes string

@allowed([
  'entra'
  'password'
])
@description('SLOTLOCK_AUTH_MODE: entra, or password (read from Key Vault).')
param redisAuth string = 'entra'

@description('SLOTLOCK_TLS_MODE: "true" or "false".')
param redisTls string = 'true'

@description('SLOTLOCK_REDIS_USERNAME, password mode: the ACL user ("" for the default user).')
param redisUsername string = ''

@description('SLOTLOCK_REDIS_PASSWORD_SECRET_URI, password mode: the Key Vault secret holding the password (versionless URI).')
param redisPasswordSecretUri string = ''

@description('SLOTLOCK_REPLICAS: replicas (min = max; 1 to 30). A cron never scales to zero and needs no autoscaling: every replica runs every job, each slot runs once.')
param replicas string = '3'

@description('SLOTLOCK_CPU: cores per replica (Consumption pairs: 0.25/0.5Gi, 0.5/1Gi, 1/2Gi, ...).')
param cpu string = '0.25'

@description('SLOTLOCK_MEMORY: memory per replica, matching cpu.')
param memory string = '0.5Gi'

@description('SLOTLOCK_TERMINATION_GRACE: seconds between SIGTERM and SIGKILL. Must exceed shutdown.grace in slotlock.yaml (25s) so running jobs finish or cancel cleanly and leases are released.')
param terminationGracePeriodSeconds string = '40'

var httpPort = 8080 // http.addr in slotlock.yaml: /healthz, /readyz, /metrics
var replicaCount = int(replicas)
var passwordMode = redisAuth == 'password'

// The job configuration, MOUNTED (not baked into the image): slotlock.yaml
// beside this file becomes a Container Apps secret, mounted read-only as
// /etc/slotlock/config.yaml. Edit it and run `azd deploy`.
var configYAML = loadTextContent('slotlock.yaml')

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
    // Ready = can run slots (a Redis majority answers). A new revision
    // counts as ready when ONE of its replicas is; then every old replica
    // gets SIGTERM (README: rollouts).
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
    value: redisNodes
  }
]
// Password mode: a Key Vault reference, resolved by Container Apps with the
// app's identity (Key Vault Secrets User on the vault). The password is in
// no template, parameter or azd environment file.
var passwordSecrets = [
  {
    name: 'redis-password'
    keyVaultUrl: redisPasswordSecretUri
    identity: identityId
  }
]
var secrets = passwordMode ? concat(configSecrets, passwordSecrets) : configSecrets

var entraEnv = [
  {
    name: 'SLOTLOCK_REDIS__AUTH'
    value: 'entra'
  }
  {
    name: 'SLOTLOCK_REDIS__ENTRA_CLIENT_ID'
    value: identityClientId
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
var authEnv = passwordMode ? concat(passwordEnv, usernameEnv) : entraEnv

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
    value: toLower(redisTls) == 'false' ? 'false' : 'true'
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

resource app 'Microsoft.App/containerApps@2024-03-01' = {
  name: appName
  location: location
  // azd finds the app it deploys by this tag.
  tags: {
    'azd-env-name': environmentName
    'azd-service-name': 'slotlock'
  }
  identity: {
    type: 'UserAssigned'
    userAssignedIdentities: {
      '${identityId}': {}
    }
  }
  properties: {
    managedEnvironmentId: environmentId
    workloadProfileName: 'Consumption'
    configuration: {
      // One active revision. A new one replaces the old as soon as ONE of
      // its replicas is ready: the old replicas all get SIGTERM then, and
      // capacity dips to what the new revision has started; the locks keep
      // every slot single throughout.
      activeRevisionsMode: 'Single'
      registries: [
        {
          server: registryEndpoint
          identity: identityId
        }
      ]
      secrets: secrets
      // No ingress: slotlock serves no traffic. Probes reach the container
      // port directly.
    }
    template: {
      terminationGracePeriodSeconds: int(terminationGracePeriodSeconds)
      containers: [
        {
          name: 'slotlock'
          image: imageName
          resources: {
            cpu: json(cpu)
            memory: memory
          }
          env: concat(baseEnv, authEnv)
          probes: probes
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
        minReplicas: replicaCount
        maxReplicas: replicaCount
      }
    }
  }
}

output SLOTLOCK_APP_NAME string = app.name
