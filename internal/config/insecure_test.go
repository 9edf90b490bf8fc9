package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A Redis password without TLS is a configuration error naming redis.tls,
// redis.password (or password_file) and the file position, unless
// redis.allow_insecure is true. Loopback nodes are no exception. Without
// nodes nothing is sent, so nothing is checked.
func TestPasswordWithoutTLS(t *testing.T) {
	lines := loadErrs(t, "redis:\n  nodes: [{addr: 'cache-a:6379'}]\n  password: x\n  tls: false\n")
	require.True(t, containsLine(lines, "redis.tls: must be true when a password is set (redis.password)"), "%v", lines)
	require.True(t, containsLine(lines, "set redis.allow_insecure: true"), "%v", lines)
	require.True(t, containsLine(lines, "config.yaml:4:3)"), "the line should point at redis.tls: %v", lines)

	pw := filepath.Join(t.TempDir(), "pw")
	require.NoError(t, os.WriteFile(pw, []byte("s3cret\n"), 0o600))
	lines = loadErrs(t, "redis: {nodes: [{addr: '127.0.0.1:6379'}], password_file: "+pw+"}\n")
	require.True(t, containsLine(lines, "(redis.password_file)"), "%v", lines)
	for _, l := range lines {
		require.NotContains(t, l, "s3cret")
	}

	cfg := mustLoad(t, "redis: {nodes: [{addr: 'cache-a:6379'}], password: x, allow_insecure: true}\n")
	require.True(t, cfg.Redis.AllowInsecure)
	cfg = mustLoad(t, "redis: {nodes: [{addr: 'cache-a:6379'}]}\n", "SLOTLOCK_REDIS__PASSWORD=x", "SLOTLOCK_REDIS__ALLOW_INSECURE=true")
	require.True(t, cfg.Redis.AllowInsecure)
	mustLoad(t, "redis: {nodes: [{addr: 'cache-a:6379'}], password: x, tls: true}\n")
	mustLoad(t, "redis: {password: x}\n") // in-process locks: the password goes nowhere
}
