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
