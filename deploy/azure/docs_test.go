package azure

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// deployDocs returns docs/deploy.md from "## Deploy to Azure Container
// Apps" to its end, and docs/deploy-azure.md.
func deployDocs(t *testing.T) (short, detail string) {
	t.Helper()
	all := read(t, "../../docs/deploy.md")
	i := strings.Index(all, "## Deploy to Azure Container Apps")
	require.GreaterOrEqual(t, i, 0, "docs/deploy.md has no Azure section")
	return all[i:], read(t, "../../docs/deploy-azure.md")
}

// The deploy docs state what the templates cannot: the failover truth,
// rollout semantics, the azd version and providers, the entrypoint, and how
// to verify a deployment, and they no longer make the false claims.
func TestDeployDocsTellTheTruth(t *testing.T) {
	short, detail := deployDocs(t)
	for _, doc := range []struct{ name, text string }{{"docs/deploy.md", short}, {"docs/deploy-azure.md", detail}} {
		for _, want := range []string{
			"asynchronous",                // Redis replication
			"planned maintenance",         // failovers are routine
			"does **not** cover",          // persistence vs failover
			"one of its replicas",         // a revision is ready when one replica is
			"1.24.3",                      // azd version
			"Microsoft.Insights",          // provider for the alert rules
			"privatelink.redis.azure.net", // private mode
			"Key Vault",                   // password mode
			"Verify a deployment",
			"What was and was not verified here",
		} {
			require.True(t, strings.Contains(doc.text, want), "%s does not say %q", doc.name, want)
		}
		for _, gone := range []string{"no data loss", "replica by replica", "placeholder image, because"} {
			require.False(t, strings.Contains(doc.text, gone), "%s still says %q", doc.name, gone)
		}
	}
	all := read(t, "../../docs/deploy.md")
	require.True(t, strings.Contains(all, "`/usr/local/bin/tini -- /usr/local/bin/slotlock`"), "docs/deploy.md's image table does not give the entrypoint")
}

// The docs give only commands that can work against these templates:
// `az containerapp exec --command` takes one program name (no arguments, no
// shell in the distroless image to split them); five nodes are one
// parameter, not an edit of the loop; the container properties listed are
// those of the API version in use (2024-03-01 has no imageType).
func TestDeployDocsCommandsWork(t *testing.T) {
	short, detail := deployDocs(t)
	for _, doc := range []struct{ name, text string }{{"docs/deploy.md", short}, {"docs/deploy-azure.md", detail}} {
		// Naming the broken form to warn against it is fine; giving it as a
		// command to run (an indented code line) is not.
		require.NotRegexp(t, `(?m)^\s{4,}az containerapp exec[^\n]*--command "[^"]* [^"]*"`, doc.text, "%s gives az containerapp exec a command with arguments", doc.name)
		require.True(t, strings.Contains(doc.text, "SLOTLOCK_REDIS_NODE_COUNT"), "%s does not say how to deploy five nodes", doc.name)
		require.False(t, strings.Contains(doc.text, "'d', 'e'"), "%s still says to edit the loop for five nodes", doc.name)
		require.True(t, strings.Contains(doc.text, "/api/v1/jobs"), "%s does not give the JSON API form", doc.name)
	}
	require.Contains(t, read(t, "slotlock.bicep"), "resource app 'Microsoft.App/containerApps@2024-03-01'")
	props := regexp.MustCompile(`(?s)container has (.*?)nothing more`).FindStringSubmatch(detail)
	require.NotNil(t, props, "docs/deploy-azure.md no longer lists a container's properties")
	require.NotContains(t, props[1], "imageType", "Microsoft.App/containerApps@2024-03-01 has no imageType")
	require.NotContains(t, stripComments(read(t, "slotlock.bicep")), "imageType")
}

// slotlock.yaml's header says what really happens to it: slotlock.bicep
// (the one template that loads it) mounts it and `azd deploy` applies it.
func TestAzureConfigHeaderNamesItsTemplate(t *testing.T) {
	files, err := filepath.Glob("*.bicep")
	require.NoError(t, err)
	var loaders []string
	for _, f := range files {
		if strings.Contains(read(t, f), "loadTextContent('slotlock.yaml')") {
			loaders = append(loaders, f)
		}
	}
	require.Equal(t, []string{"slotlock.bicep"}, loaders)
	cfg := read(t, "slotlock.yaml")
	header := cfg[:strings.Index(cfg, "\nlog:")]
	require.Contains(t, header, "slotlock.bicep loads this")
	require.Contains(t, header, "then `azd deploy`")
	require.NotContains(t, header, "main.bicep")
	require.NotContains(t, header, "then `azd provision`")
	grace := regexp.MustCompile(`(?m)^param terminationGracePeriodSeconds string = '(\d+)'$`).FindStringSubmatch(read(t, "slotlock.bicep"))
	require.NotNil(t, grace)
	require.Contains(t, cfg, "terminationGracePeriodSeconds (slotlock.bicep: "+grace[1]+")")
}
