// Package azure checks the Azure Developer CLI project's templates for the
// settings slotlock's guarantees depend on. Bicep cannot be compiled here
// (no Bicep CLI), so these are textual checks of the files as shipped.
package azure

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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

// The node count is one parameter, 3 or 5, and the app gets every
// instance deployed for either: the module loop deploys one instance per
// count, the output loop hands each one's address on, main.bicep joins them
// into SLOTLOCK_NODES, and slotlock.bicep gives that list to every replica
// as SLOTLOCK_REDIS__NODES. No instance is addressed by a fixed index (the
// earlier hard-coded redis[0]..redis[2] left two of five caches billed and
// unused). The loops are evaluated here for both counts, as text: there is
// no Bicep compiler to run them.
func TestAppGetsEveryDeployedRedisNode(t *testing.T) {
	main := read(t, "main.bicep")
	require.Regexp(t, `(?m)^@allowed\(\[\s*3\s*5\s*\]\)\n@description\('[^\n]*'\)\nparam redisNodeCount int = 3$`, main)
	require.Equal(t, "${SLOTLOCK_REDIS_NODE_COUNT=3}", readParams(t, "main.parameters.json")["redisNodeCount"])
	require.Contains(t, onlyDecl(t, parseBicep(t, "main.bicep"), "module", "resources").body, "redisNodeCount: redisNodeCount")
	require.Regexp(t, `(?m)^output SLOTLOCK_NODES string = deployRedis \? join\(resources\.outputs\.deployedNodes, ','\) : redisNodes$`, main)
	require.Equal(t, "${SLOTLOCK_NODES}", readParams(t, "slotlock.parameters.json")["redisNodes"])
	app := read(t, "slotlock.bicep")
	require.Regexp(t, `name: 'redis-nodes'\s*value: redisNodes\s*\}`, app)
	require.Regexp(t, `name: 'SLOTLOCK_REDIS__NODES'\s*secretRef: 'redis-nodes'`, app)

	files, err := filepath.Glob("*.bicep")
	require.NoError(t, err)
	for _, f := range files {
		require.NotRegexp(t, `redis\[\d+\]`, stripComments(read(t, f)), "%s addresses a Redis instance by a fixed index", f)
	}

	res := read(t, "resources.bicep")
	require.Regexp(t, `(?m)^@allowed\(\[\s*3\s*5\s*\]\)\nparam redisNodeCount int$`, res)
	loop := regexp.MustCompile(`(?m)^module redis 'redis\.bicep' = \[for suffix in take\(\[([^\]]*)\], redisNodeCount\): if \(deployRedis\) \{$`).FindStringSubmatch(res)
	require.NotNil(t, loop, "the redis module loop is not `for suffix in take([...], redisNodeCount)`")
	var suffixes []string
	for _, m := range regexp.MustCompile(`'([a-z])'`).FindAllStringSubmatch(loop[1], -1) {
		suffixes = append(suffixes, m[1])
	}
	require.Contains(t, onlyDecl(t, parseBicep(t, "resources.bicep"), "module", "redis").body, "name: 'redis-${token}-${suffix}'")
	out := regexp.MustCompile(`(?m)^output deployedNodes array = \[for (\w+) in range\(0, deployRedis \? redisNodeCount : 0\): redis\[(\w+)\]!\.outputs\.address\]$`).FindStringSubmatch(res)
	require.NotNil(t, out, "resources.bicep does not output every deployed instance's address")
	require.Equal(t, out[1], out[2], "the output loop indexes the instances with another variable than its own")
	require.Contains(t, read(t, "redis.bicep"), "output address string = '${cluster.properties.hostName}:${port}'")

	for _, count := range []int{3, 5} {
		require.GreaterOrEqual(t, len(suffixes), count, "take() has fewer suffixes than %d instances", count)
		deployed := map[string]bool{} // instance names the module loop creates
		for _, s := range suffixes[:count] {
			require.False(t, deployed[s], "suffix %s twice: two instances with one name", s)
			deployed[s] = true
		}
		var given []string // instances whose address the app gets: redis[i], i in range(0, count)
		for i := range count {
			given = append(given, suffixes[i])
		}
		require.Len(t, deployed, count)
		require.ElementsMatch(t, slices.Sorted(maps.Keys(deployed)), given, "with %d nodes the app does not get every deployed instance", count)
	}
}
