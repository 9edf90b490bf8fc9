package config

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// The definitions hash changes with any job setting, not with settings
// outside the jobs, and not with a secret inside a plugin's params.
func TestDefinitionsHash(t *testing.T) {
	base := `
redis:
  nodes: [{addr: "%s:6379"}]
jobs:
  - name: report
    schedule: "%s"
    plugin: http
    params:
      url: "https://fn.example/run?code=%s"
`
	load := func(node, sched, secret string) string {
		return mustLoad(t, fmt.Sprintf(base, node, sched, secret)).DefinitionsHash()
	}
	h := load("a", "@every 10s", "s3cret-one")
	require.Regexp(t, regexp.MustCompile(`^[0-9a-f]{12}$`), h)
	require.Equal(t, h, load("a", "@every 10s", "s3cret-one"), "stable")
	require.Equal(t, h, load("b", "@every 10s", "s3cret-one"), "a node is not a job definition")
	require.Equal(t, h, load("a", "@every 10s", "s3cret-two"), "a secret never feeds the hash")
	require.NotEqual(t, h, load("a", "@every 20s", "s3cret-one"), "a schedule is")
}

// With a Redis password the hash is keyed with it over the unredacted
// definitions: the same on every replica of the fleet (same password),
// changed by a secret in a job, and not computable without the password
// (the redacted tree's plain hash, what a guesser could compute from the
// dump, differs).
func TestDefinitionsHashKeyedWithThePassword(t *testing.T) {
	base := `
redis:
  nodes: [{addr: "a:6380"}]
  password: %s
  tls: true
jobs:
  - name: dump
    schedule: "@every 10s"
    plugin: exec
    params:
      command: [mysqldump, --password, "%s"]
`
	load := func(pw, secret string) *Config { return mustLoad(t, fmt.Sprintf(base, pw, secret)) }
	a := load("fleet-pass-1", "guess-1")
	h := a.DefinitionsHash()
	require.Regexp(t, regexp.MustCompile(`^[0-9a-f]{12}$`), h)
	require.Equal(t, h, load("fleet-pass-1", "guess-1").DefinitionsHash(), "every replica computes the same")
	require.NotEqual(t, h, load("fleet-pass-1", "guess-2").DefinitionsHash(), "a changed secret shows as a change")
	require.NotEqual(t, h, load("fleet-pass-2", "guess-1").DefinitionsHash(), "keyed by the password")
	unkeyed := *a
	unkeyed.Redis.Password = ""
	require.NotEqual(t, h, unkeyed.DefinitionsHash(), "the published hash is not the dump's plain hash")
	require.Equal(t, unkeyed.DefinitionsHash(), func() string {
		b := load("x", "guess-2")
		b.Redis.Password = ""
		return b.DefinitionsHash()
	}(), "without a key no secret feeds the hash")
}
