package jobs

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/internal/secrettest"
)

// The shapes a deny-list of names misses: env values under names no
// pattern knows, arguments, a DSN, an http body. By structure they are all
// hidden in the dump, whatever their names.
func TestRedactParamsHidesByStructure(t *testing.T) {
	exec := map[string]any{
		"command": []any{"/usr/bin/mysqldump", "--password", secrettest.ArgSecret, "-u", "user:" + secrettest.ArgSecret,
			"--dsn", "user:" + secrettest.DSNPassword + "@tcp(db:3306)/app", "--daily"},
		"env":       map[string]any{"MYSQL_PWD": secrettest.EnvPlain, "GPG_PASSPHRASE": secrettest.EnvPlain, "MODE": "nightly"},
		"show_env":  []any{"MODE"},
		"show_args": []any{7},
	}
	shown := RedactParams(mustJob(t, "exec", exec), exec)
	b, _ := json.Marshal(shown)
	secrettest.Capture(b)
	require.NotContains(t, string(b), secrettest.ArgSecret)
	require.NotContains(t, string(b), secrettest.DSNPassword)
	require.NotContains(t, string(b), secrettest.EnvPlain)
	env := shown["env"].(map[string]any)
	require.Equal(t, Redacted, env["MYSQL_PWD"])
	require.Equal(t, "nightly", env["MODE"], "show_env shows a value")
	cmd := shown["command"].([]any)
	require.Equal(t, "/usr/bin/mysqldump", cmd[0], "the program is always shown")
	require.Equal(t, Redacted, cmd[1], "an argument is hidden by its place, even a harmless one")
	require.Equal(t, "--daily", cmd[7], "show_args shows a position")
	require.Equal(t, secrettest.EnvPlain, exec["env"].(map[string]any)["MYSQL_PWD"], "params untouched")

	hp := map[string]any{"url": "https://h/hook", "body": `{"password": "` + secrettest.BodySecret + `"}`}
	shown = RedactParams(mustJob(t, "http", hp), hp)
	b, _ = json.Marshal(shown)
	secrettest.Capture(b)
	require.Equal(t, Redacted, shown["body"])
	hp["show_body"] = true
	hp["body"] = `{"report": "daily"}`
	require.Equal(t, hp["body"], RedactParams(mustJob(t, "http", hp), hp)["body"], "show_body shows it")
}

// The program's output and its error are scrubbed of the job's hidden
// values and of URL credentials, whatever their names.
func TestExecOutputAndErrorScrubbed(t *testing.T) {
	params := helperCommand("args", "--password", secrettest.ArgSecret,
		"postgres://u:"+secrettest.OutputSecret+"@db/app")
	params["show_args"] = []any{3} // shown, but a URL's credentials are masked all the same
	params["env"].(map[string]any)["MYSQL_PWD"] = secrettest.EnvPlain
	run, logs := testRun(t)
	require.NoError(t, mustJob(t, "exec", params).Run(context.Background(), run))
	out := logs.String()
	for _, s := range []string{secrettest.ArgSecret, secrettest.EnvPlain, secrettest.OutputSecret} {
		require.NotContains(t, out, s)
	}
	require.Contains(t, out, "postgres://***@db/app")

	// A failing program whose last stderr line holds a secret.
	params = helperCommand("echo-fail")
	params["env"].(map[string]any)["GITHUB_PAT"] = secrettest.EnvPlain
	run, logs = testRun(t)
	err := mustJob(t, "exec", params).Run(context.Background(), run)
	require.Error(t, err)
	secrettest.CaptureString(err.Error())
	require.NotContains(t, err.Error(), secrettest.EnvPlain)
	require.NotContains(t, err.Error(), secrettest.OutputSecret)
	require.Contains(t, err.Error(), "https://***@")
	require.NotContains(t, logs.String(), secrettest.EnvPlain)
}

func init() {
	extraHelpers["echo-fail"] = func() int {
		// prints its own secret env value and a URL with user info
		os.Stderr.WriteString("token " + os.Getenv("GITHUB_PAT") + " rejected by https://u:" + secrettest.OutputSecret + "@git.example/\n")
		return 1
	}
}
