package cli_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/internal/secrettest"
)

// slotlockIn runs the binary in dir with the environment's SLOTLOCK_*
// variables replaced by env, and returns stdout, stderr and the exit code.
func slotlockIn(t *testing.T, dir string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SLOTLOCK_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	secrettest.Capture(out.Bytes())
	secrettest.Capture(errb.Bytes())
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// With no configuration file at all — no --config, no SLOTLOCK_CONFIG, no
// config.yaml in the working directory — and no SLOTLOCK_REDIS__NODES,
// each command on the fleet exits 2 naming the three ways to say where the
// fleet is. A file that is named or present is read as before: a named
// one that is missing is an error, not the environment's turn; a
// config.yaml in the working directory is the configuration.
func TestFleetConfigWithoutFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, args := range [][]string{
		{"status"}, {"history", "tick"}, {"pause", "tick"}, {"resume", "tick"},
		{"backfill", "--from", "2026-01-01T00:00:00Z", "--to", "2026-01-01T01:00:00Z", "tick"},
	} {
		_, errOut, code := slotlockIn(t, dir, nil, args...)
		require.Equal(t, 2, code, "%v: %s", args, errOut)
		require.Contains(t, errOut, "slotlock "+args[0]+": no configuration file and no Redis node", args)
		for _, name := range []string{"--config", "SLOTLOCK_CONFIG", "SLOTLOCK_REDIS__NODES"} {
			require.Contains(t, errOut, name, args)
		}
		require.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %s", errOut)
	}

	// The variables are the configuration, validated as a file would be.
	_, errOut, code := slotlockIn(t, dir, []string{"SLOTLOCK_REDIS__NODES=127.0.0.1:1", "SLOTLOCK_LOCK__TTL=soon"}, "status")
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "lock.ttl")

	_, errOut, code = slotlockIn(t, dir, []string{"SLOTLOCK_CONFIG=" + filepath.Join(dir, "missing.yaml"),
		"SLOTLOCK_REDIS__NODES=127.0.0.1:1"}, "status")
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "cannot read configuration")
	_, errOut, code = slotlockIn(t, dir, []string{"SLOTLOCK_REDIS__NODES=127.0.0.1:1"}, "status", "--config", "missing.yaml")
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "cannot read configuration")

	// trigger runs the job's body: it needs the file.
	_, errOut, code = slotlockIn(t, dir, []string{"SLOTLOCK_REDIS__NODES=127.0.0.1:1"}, "trigger", "tick")
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "cannot read configuration")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("log: {level: info}\n"), 0o600))
	_, errOut, code = slotlockIn(t, dir, nil, "status")
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, "slotlock status: needs redis.nodes", "the working directory's file is read")
}
