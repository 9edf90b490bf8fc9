// Password mode only (your own Redis nodes with SLOTLOCK_REDIS_AUTH=password):
// the Key Vault that holds the Redis password. The password never passes
// through azd's environment file or a template parameter: you store it with
// `az keyvault secret set` and the app reads it through a Container Apps
// Key Vault reference (keyVaultUrl + identity), with its own identity.

param location string
param tags object

@description('Name of the vault (3-24 characters).')
param name string

@description('Object id of the app identity, which may read secrets.')
param appPrincipalId string

@description('Object id of whoever runs azd (AZURE_PRINCIPAL_ID), who may write the secret; empty: grant it yourself.')
param adminPrincipalId string = ''

// Built-in roles (Key Vault RBAC, data plane).
var secretsUser = subscriptionResourceId('Microsoft.Authorization/roleDefinitions', '4633458b-17de-408a-b874-0445c86b69e6')
var secretsOfficer = subscriptionResourceId('Microsoft.Authorization/roleDefinitions', 'b86a8fe4-44ce-4948-aee5-eccb2c155cd7')

resource vault 'Microsoft.KeyVault/vaults@2023-07-01' = {
  name: name
  location: location
  tags: tags
  properties: {
    tenantId: subscription().tenantId
    sku: {
      family: 'A'
      name: 'standard'
    }
    // Roles, not access policies: who may read is an auditable role
    // assignment on the vault.
    enableRbacAuthorization: true
    enableSoftDelete: true
    softDeleteRetentionInDays: 7
    // Reachable from where you run `az keyvault secret set`; reads need the
    // role below. A private endpoint for the vault is not part of this
    // template (see docs/deploy-azure.md).
    publicNetworkAccess: 'Enabled'
  }
}

resource appReads 'Microsoft.Authorization/roleAssignments@2022-04-01' = {
  name: guid(vault.id, appPrincipalId, secretsUser)
  scope: vault
  properties: {
    roleDefinitionId: secretsUser
    principalId: appPrincipalId
    principalType: 'ServicePrincipal'
  }
}

resource adminWrites 'Microsoft.Authorization/roleAssignments@2022-04-01' = if (!empty(adminPrincipalId)) {
  name: guid(vault.id, adminPrincipalId, secretsOfficer)
  scope: vault
  properties: {
    roleDefinitionId: secretsOfficer
    principalId: adminPrincipalId
  }
}

output name string = vault.name
@description('Versionless URI of the Redis password secret: the app always reads its latest version.')
output passwordSecretUri string = '${vault.properties.vaultUri}secrets/redis-password'
