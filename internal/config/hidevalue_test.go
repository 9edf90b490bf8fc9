package config

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/internal/secrettest"
)

// SLOTLOCK_REDIS__NODES pasted as an Azure connection string, or a node
// written as a URL with its password: the error names the key and says
// what to do, and never echoes the password, at load and at hot reload
// (LoadData, what the reloader calls).
func TestConfigErrorsHideConnectionStrings(t *testing.T) {
	azure := "cache.redis.cache.windows.net:6380,password=" + secrettest.FleetRedis + ",ssl=True,abortConnect=False"
	for _, tc := range []struct{ name, yaml, env string }{
		{"env connection string", "log: {level: info}\n", "SLOTLOCK_REDIS__NODES=" + azure},
		{"env one node", "log: {level: info}\n", "SLOTLOCK_REDIS__NODES=" + secrettest.FleetRedis + "@cache:6380"},
		{"file URL", "redis:\n  nodes: [{addr: 'redis://default:" + secrettest.FleetRedis + "@cache:6380'}]\n", ""},
		{"file user info", "redis:\n  nodes: [{addr: 'u:" + secrettest.FleetRedis + "@cache:6380'}]\n", ""},
		{"password type", "redis:\n  password: [" + secrettest.FleetRedis + "]\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var env []string
			if tc.env != "" {
				env = []string{tc.env}
			}
			lines := loadErrs(t, tc.yaml, env...)
			_, err := LoadData("config.yaml", []byte(tc.yaml), env)
			require.Error(t, err)
			secrettest.CaptureString(err.Error())
			all := strings.Join(lines, "\n") + "\n" + err.Error()
			require.NotContains(t, all, secrettest.FleetRedis)
			require.NotContains(t, all, "password=")
			require.Contains(t, all, "redis.")
		})
	}
	lines := loadErrs(t, "log: {level: info}\n", "SLOTLOCK_REDIS__NODES="+azure)
	require.True(t, containsLine(lines, "redis.nodes[1].addr: want host:port; this looks like a connection string"), "%v", lines)
	require.True(t, containsLine(lines, "(env SLOTLOCK_REDIS__NODES)"), "%v", lines)
}
