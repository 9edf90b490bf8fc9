// The image the slotlock app runs now, so that re-provisioning keeps what
// `azd deploy` rolled out instead of resetting it to the placeholder. A
// module, because a template cannot both read (existing) and deploy the same
// resource.

@description('Whether the app exists yet (azd: SERVICE_SLOTLOCK_RESOURCE_EXISTS).')
param exists bool

@description('Name of the container app.')
param name string

resource app 'Microsoft.App/containerApps@2024-03-01' existing = if (exists) {
  name: name
}

@description('The first container\'s image, or "" when the app does not exist.')
output image string = exists ? app!.properties.template.containers[0].image : ''
