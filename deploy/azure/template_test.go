// Package azure checks the Azure Developer CLI project's templates for the
// settings slotlock's guarantees depend on. Bicep cannot be compiled here
// (no Bicep CLI), so these are textual checks of the files as shipped.
package azure

import (
	"encoding/json"
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	return string(b)
}

// The Redis instances persist their data by default: a node that comes
// back empty can break mutual exclusion and fencing-token order (docs/guarantees.md,
// "Limits"). The default holds whether or not azd passes the
// parameter.
func TestRedisPersistenceIsOnByDefault(t *testing.T) {
	main := read(t, "main.bicep")
	require.Regexp(t, regexp.MustCompile(`(?m)^param redisPersistence bool = true$`), main)

	var params struct {
		Parameters map[string]struct {
			Value string `json:"value"`
		} `json:"parameters"`
	}
	require.NoError(t, json.Unmarshal([]byte(read(t, "main.parameters.json")), &params))
	require.Equal(t, "${SLOTLOCK_REDIS_PERSISTENCE=true}", params.Parameters["redisPersistence"].Value)

	// The flag reaches every instance and turns on the append-only file.
	require.Contains(t, read(t, "resources.bicep"), "persistence: redisPersistence")
	redis := read(t, "redis.bicep")
	require.Regexp(t, regexp.MustCompile(`persistence: persistence \? \{\s*aofEnabled: true`), redis)
}

// The app has no ingress: the ops port (/healthz, /readyz, /metrics) is
// reachable by the platform's probes, not from the internet.
func TestAppHasNoIngress(t *testing.T) {
	require.NotRegexp(t, regexp.MustCompile(`(?m)^\s*ingress:`), read(t, "resources.bicep"))
}
