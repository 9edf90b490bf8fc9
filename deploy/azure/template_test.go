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

	require.Equal(t, "${SLOTLOCK_REDIS_PERSISTENCE=true}", readParams(t, "main.parameters.json")["redisPersistence"])

	// The flag reaches every instance and turns on the append-only file.
	require.Contains(t, read(t, "resources.bicep"), "persistence: redisPersistence")
	redis := read(t, "redis.bicep")
	require.Regexp(t, regexp.MustCompile(`persistence: persistence \? \{\s*aofEnabled: true`), redis)
}

// readParams reads an ARM parameters file (every value a string: azd
// substitutes its environment into them).
func readParams(t *testing.T, file string) map[string]string {
	t.Helper()
	var params struct {
		Parameters map[string]struct {
			Value string `json:"value"`
		} `json:"parameters"`
	}
	require.NoError(t, json.Unmarshal([]byte(read(t, file)), &params))
	out := map[string]string{}
	for k, v := range params.Parameters {
		out[k] = v.Value
	}
	return out
}

// The templates say what Azure Managed Redis's high availability is:
// asynchronous replication, whose failover (routine, for maintenance) can
// lose acknowledged writes; persistence does not cover it.
func TestRedisFailoverIsDescribedTruthfully(t *testing.T) {
	main := read(t, "main.bicep")
	require.NotContains(t, main, "no data loss")
	ha := regexp.MustCompile(`@description\('([^\n]*)'\)\nparam redisHighAvailability bool`).FindStringSubmatch(main)
	require.NotNil(t, ha, "redisHighAvailability has no description")
	require.Contains(t, ha[1], "ASYNCHRONOUS")
	require.Contains(t, ha[1], "can lose writes the primary had acknowledged")
	require.Contains(t, ha[1], "persistence does not cover a failover")
	require.Contains(t, read(t, "redis.bicep"), "the replication is asynchronous")
}
