package azure

import (
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
