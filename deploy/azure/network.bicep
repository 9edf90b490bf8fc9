// Private mode's network: a virtual network with one subnet for the
// Container Apps environment (delegated to it; a workload-profiles
// environment needs at least a /27) and one for the private endpoints of the
// Redis instances, and the private DNS zone that makes the instances' host
// names resolve to those endpoints inside the network.

param location string
param tags object

@description('Name of the virtual network.')
param name string

@description('Address space of the virtual network; the two subnets are its first /23 and the /24 after it.')
param addressPrefix string

var appsPrefix = cidrSubnet(addressPrefix, 23, 0)
var endpointsPrefix = cidrSubnet(addressPrefix, 24, 2)

resource vnet 'Microsoft.Network/virtualNetworks@2024-05-01' = {
  name: name
  location: location
  tags: tags
  properties: {
    addressSpace: {
      addressPrefixes: [
        addressPrefix
      ]
    }
    subnets: [
      {
        name: 'snet-apps'
        properties: {
          addressPrefix: appsPrefix
          delegations: [
            {
              name: 'containerapps'
              properties: {
                serviceName: 'Microsoft.App/environments'
              }
            }
          ]
        }
      }
      {
        name: 'snet-private-endpoints'
        properties: {
          addressPrefix: endpointsPrefix
          privateEndpointNetworkPolicies: 'Disabled'
        }
      }
    ]
  }
}

// Azure Managed Redis's private link zone (Azure Cache for Redis uses
// privatelink.redis.cache.windows.net; Redis Enterprise clusters made before
// Azure Managed Redis used privatelink.redisenterprise.cache.azure.net).
resource zone 'Microsoft.Network/privateDnsZones@2020-06-01' = {
  name: 'privatelink.redis.azure.net'
  location: 'global'
  tags: tags
}

resource link 'Microsoft.Network/privateDnsZones/virtualNetworkLinks@2020-06-01' = {
  parent: zone
  name: name
  location: 'global'
  tags: tags
  properties: {
    registrationEnabled: false
    virtualNetwork: {
      id: vnet.id
    }
  }
}

output appsSubnetId string = vnet.properties.subnets[0].id
output privateEndpointSubnetId string = vnet.properties.subnets[1].id
output redisDnsZoneId string = zone.id
