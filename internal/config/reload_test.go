package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// What a reload compares: the settings that need a restart (by name,
// secrets included, never shown), the jobs added, removed and changed
// (params and secrets included), and LoadData's agreement with Load.
func TestReloadComparisons(t *testing.T) {
	base := `
redis:
  nodes: [{addr: "%s:6379"}]
  password: "%s"
  tls: true
lock: {ttl: %s}
jobs:
  - name: keep
    schedule: "@every 10s"
    plugin: log
    params: {message: hi}
%s`
	load := func(node, pw, ttl, jobs string) *Config {
		return mustLoad(t, fmt.Sprintf(base, node, pw, ttl, jobs))
	}
	report := func(sched, secret string) string {
		return fmt.Sprintf(`  - name: report
    schedule: "%s"
    plugin: http
    params: {url: "https://fn.example/run?code=%s"}
`, sched, secret)
	}
	old := load("a", "pw-one", "30s", report("@hourly", "s3cret-one"))

	require.Empty(t, old.RestartNeeded(load("a", "pw-one", "30s", "")), "jobs only")
	require.Equal(t, []string{"lock.ttl", "redis.nodes", "redis.password"},
		old.RestartNeeded(load("b", "pw-two", "20s", report("@hourly", "s3cret-one"))))

	added, removed, changed := old.DiffJobs(load("a", "pw-one", "30s", ""))
	require.Empty(t, added)
	require.Equal(t, []string{"report"}, removed)
	require.Empty(t, changed)
	added, removed, changed = old.DiffJobs(load("a", "pw-one", "30s", report("@daily", "s3cret-one")+`  - name: new
    schedule: "@daily"
    plugin: log
    params: {message: new}
`))
	require.Equal(t, []string{"new"}, added)
	require.Empty(t, removed)
	require.Equal(t, []string{"report"}, changed)
	_, _, changed = old.DiffJobs(load("a", "pw-one", "30s", report("@hourly", "s3cret-two")))
	require.Equal(t, []string{"report"}, changed, "a secret in params is a change, though not of the hash")

	// WithJobs: the settings in force, the new jobs.
	next := load("b", "pw-two", "20s", "")
	merged := old.WithJobs(next)
	require.Equal(t, old.Redis.Nodes, merged.Redis.Nodes)
	require.Equal(t, old.Lock.TTL, merged.Lock.TTL)
	require.Len(t, merged.Jobs, 1)
	// The hash is keyed with the password in force (the old one: a new
	// password needs a restart), over the new jobs.
	require.Equal(t, load("b", "pw-one", "20s", "").DefinitionsHash(), merged.DefinitionsHash())
	require.Len(t, old.Jobs, 2, "old untouched")

	// LoadData is Load on the contents.
	text := fmt.Sprintf(base, "a", "pw-one", "30s", "")
	fromData, err := LoadData("config.yaml", []byte(text), nil)
	require.NoError(t, err)
	require.Equal(t, load("a", "pw-one", "30s", "").DefinitionsHash(), fromData.DefinitionsHash())
	_, err = LoadData("config.yaml", []byte(strings.Replace(text, "@every 10s", "@every 0s", 1)+"\nbogus: 1\n"), nil)
	var errs Errors
	require.ErrorAs(t, err, &errs)
	require.GreaterOrEqual(t, len(errs), 2, "every error at once: %v", err)
}
