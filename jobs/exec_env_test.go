package jobs

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/internal/secrettest"
)

// runHelperEnv runs the "args" helper with params and returns the
// environment it printed, and the captured log.
func runHelperEnv(t *testing.T, params map[string]any) (map[string]string, *logBuffer) {
	t.Helper()
	run, logs := testRun(t)
	require.NoError(t, mustJob(t, "exec", params).Run(context.Background(), run))
	var got struct{ Env map[string]string }
	require.NoError(t, json.Unmarshal([]byte(logs.Event(t, "exec.output")["stdout"].(string)), &got))
	return got.Env, logs
}

// identityEnv is what Azure Container Apps (and App Service) put in a
// replica's environment when it has a managed identity, plus slotlock's own
// settings.
func identityEnv(t *testing.T) {
	t.Setenv("IDENTITY_ENDPOINT", "http://localhost:42356/msi/token?"+secrettest.IdentityURL)
	t.Setenv("IDENTITY_HEADER", secrettest.IdentityHdr)
	t.Setenv("MSI_ENDPOINT", "http://localhost:42356/msi/token?"+secrettest.IdentityURL)
	t.Setenv("MSI_SECRET", secrettest.IdentityHdr)
	t.Setenv("AZURE_CLIENT_ID", "00000000-0000-0000-0000-000000000001")
	t.Setenv("SLOTLOCK_REDIS__PASSWORD", secrettest.RedisPass)
	t.Setenv("SLOTLOCK_CONFIG", "/etc/slotlock/config.yaml")
	t.Setenv("SLOTLOCK_REPLICA", "replica-a")
	t.Setenv("CONTAINER_APP_NAME", "slotlock-app")
	t.Setenv("LANG", "C.UTF-8")
}

// An exec job printing its environment shows no identity variable and
// none of slotlock's settings: only PATH, HOME, LANG, TZ, the run's
// SLOTLOCK_* variables and what the job's env sets.
func TestExecEnvironmentIsMinimal(t *testing.T) {
	identityEnv(t)
	env, logs := runHelperEnv(t, helperCommand("args"))
	allowed := append([]string{"JOBS_TEST_HELPER", "GORACE", "SLOTLOCK_JOB", "SLOTLOCK_SLOT", "SLOTLOCK_RUN_ID",
		"SLOTLOCK_REPLICA", "SLOTLOCK_FENCING_TOKEN", "SLOTLOCK_ATTEMPT"}, baseEnv...)
	for k := range env {
		require.True(t, slices.Contains(allowed, k), "the job got %s from slotlock's environment", k)
	}
	require.Equal(t, os.Getenv("PATH"), env["PATH"])
	require.Equal(t, "C.UTF-8", env["LANG"])
	require.Equal(t, "nightly-report", env["SLOTLOCK_JOB"])
	out := logs.String()
	for _, s := range []string{"IDENTITY_ENDPOINT", "IDENTITY_HEADER", "MSI_", "AZURE_CLIENT_ID", "SLOTLOCK_REDIS__PASSWORD", "SLOTLOCK_CONFIG", "CONTAINER_APP_NAME"} {
		require.NotContains(t, out, s)
	}
	requireNoSecret(t, out)
}

// inherit_env passes named variables on, even sensitive ones when the
// user says so; their values are still hidden in the logged output.
func TestExecInheritEnv(t *testing.T) {
	identityEnv(t)
	params := helperCommand("args")
	params["inherit_env"] = []any{"AZURE_CLIENT_ID", "IDENTITY_HEADER", "NOT_SET_ANYWHERE"}
	params["env"].(map[string]any)["DB_PASSWORD"] = secrettest.EnvSecret
	run, logs := testRun(t)
	require.NoError(t, mustJob(t, "exec", params).Run(context.Background(), run))
	stdout := logs.Event(t, "exec.output")["stdout"].(string)
	require.Contains(t, stdout, `"AZURE_CLIENT_ID":"00000000-0000-0000-0000-000000000001"`)
	require.Contains(t, stdout, `"IDENTITY_HEADER":"***"`, "inherited, and hidden in the log")
	require.Contains(t, stdout, `"DB_PASSWORD":"***"`)
	require.NotContains(t, stdout, "NOT_SET_ANYWHERE")
	require.NotContains(t, stdout, "IDENTITY_ENDPOINT")
	requireNoSecret(t, logs.String())
}

// A failing job's error (its last stderr line) hides its secrets too.
func TestExecErrorHidesSecrets(t *testing.T) {
	params := map[string]any{
		"command": []any{"/bin/sh", "-c", `echo "connecting with $DB_PASSWORD" >&2; exit 4`},
		"env":     map[string]any{"DB_PASSWORD": secrettest.EnvSecret},
	}
	run, logs := testRun(t)
	err := mustJob(t, "exec", params).Run(context.Background(), run)
	require.Error(t, err)
	secrettest.CaptureString(err.Error())
	require.Contains(t, err.Error(), `"connecting with ***"`)
	requireNoSecret(t, err.Error(), logs.String())
}

// run_as_uid runs the program as another user with no supplementary
// groups. Needs root (or CAP_SETUID/CAP_SETGID).
func TestExecRunAsUID(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("run_as_uid needs root")
	}
	run, logs := testRun(t)
	j := mustJob(t, "exec", map[string]any{"command": []any{"/bin/sh", "-c", "id -u; id -g; id -G"}, "run_as_uid": 65534})
	require.NoError(t, j.Run(context.Background(), run))
	out := strings.Fields(logs.Event(t, "exec.output")["stdout"].(string))
	require.Equal(t, []string{"65534", "65534", "65534"}, out)
}
