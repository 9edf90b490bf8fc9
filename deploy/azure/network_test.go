package azure

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// param returns a main.parameters.json-style file's value for name.
func paramValue(t *testing.T, file, name string) string {
	t.Helper()
	params := readParams(t, file)
	v, ok := params[name]
	require.True(t, ok, "%s has no parameter %s", file, name)
	return v
}

func onlyDecl(t *testing.T, decls []bicepDecl, kind, symbol string) bicepDecl {
	t.Helper()
	for _, d := range decls {
		if d.kind == kind && d.symbol == symbol {
			return d
		}
	}
	t.Fatalf("no %s %s", kind, symbol)
	return bicepDecl{}
}

// Private by default: a new environment puts the Container Apps
// environment on a virtual network, each Redis instance behind a private
// endpoint with public network access disabled, and wires the private DNS
// zone; the public mode stays as an explicit choice.
func TestPrivateNetworkIsTheDefault(t *testing.T) {
	require.Regexp(t, `(?m)^param privateNetwork bool = true$`, read(t, "main.bicep"))
	require.Equal(t, "${SLOTLOCK_PRIVATE_NETWORK=true}", paramValue(t, "main.parameters.json", "privateNetwork"))
	require.Contains(t, read(t, "main.bicep"), "privateNetwork: privateNetwork")

	res := parseBicep(t, "resources.bicep")
	network := onlyDecl(t, res, "module", "network")
	require.Equal(t, "network.bicep", network.target)
	require.Equal(t, "if (privateNetwork)", network.header)
	cae := onlyDecl(t, res, "resource", "cae")
	require.Regexp(t, `vnetConfiguration: privateNetwork \? \{\s*infrastructureSubnetId: network!\.outputs\.appsSubnetId`, cae.body)
	require.Regexp(t, `zoneRedundant: privateNetwork && zoneRedundant`, cae.body)
	redis := onlyDecl(t, res, "module", "redis")
	require.Regexp(t, `privateEndpointSubnetId: privateNetwork \? network!\.outputs\.privateEndpointSubnetId : ''`, redis.body)
	require.Regexp(t, `privateDnsZoneId: privateNetwork \? network!\.outputs\.redisDnsZoneId : ''`, redis.body)

	// The instance: public access off exactly when it has a private
	// endpoint, and the endpoint's DNS registration in the zone.
	rd := parseBicep(t, "redis.bicep")
	require.Contains(t, read(t, "redis.bicep"), "var private = !empty(privateEndpointSubnetId)")
	cluster := onlyDecl(t, rd, "resource", "cluster")
	require.Regexp(t, `(?m)^\s*publicNetworkAccess: private \? 'Disabled' : 'Enabled'$`, cluster.body)
	endpoint := onlyDecl(t, rd, "resource", "endpoint")
	require.Equal(t, "Microsoft.Network/privateEndpoints", endpoint.typ())
	require.Equal(t, "if (private)", endpoint.header)
	require.Regexp(t, `privateLinkServiceId: cluster\.id\s*groupIds: \[\s*'redisEnterprise'\s*\]`, endpoint.body)
	require.Regexp(t, `subnet: \{\s*id: privateEndpointSubnetId`, endpoint.body)
	dns := onlyDecl(t, rd, "resource", "dns")
	require.Equal(t, "Microsoft.Network/privateEndpoints/privateDnsZoneGroups", dns.typ())
	require.Equal(t, "if (private)", dns.header)
	require.Contains(t, dns.body, "privateDnsZoneId: privateDnsZoneId")

	// The zone is Azure Managed Redis's, linked to the network, and the
	// environment's subnet is delegated to Container Apps.
	nw := parseBicep(t, "network.bicep")
	zone := onlyDecl(t, nw, "resource", "zone")
	require.Contains(t, zone.body, "name: 'privatelink.redis.azure.net'")
	link := onlyDecl(t, nw, "resource", "link")
	require.Contains(t, link.body, "id: vnet.id")
	require.Regexp(t, `registrationEnabled: false`, link.body)
	vnet := onlyDecl(t, nw, "resource", "vnet")
	require.Regexp(t, `name: 'snet-apps'[\s\S]*serviceName: 'Microsoft.App/environments'`, vnet.body)
	require.Contains(t, read(t, "network.bicep"), "output appsSubnetId string = vnet.properties.subnets[0].id")

	// Nowhere does a Redis instance get public access unconditionally.
	for _, d := range resourcesOfType(t, allBicep(t), "Microsoft.Cache/redisEnterprise") {
		for _, m := range regexp.MustCompile(`publicNetworkAccess: ([^\n]+)`).FindAllStringSubmatch(d.body, -1) {
			require.True(t, strings.HasPrefix(m[1], "private ?"), "%s: publicNetworkAccess: %s", d.file, m[1])
		}
	}
}
