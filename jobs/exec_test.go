package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func helperCommand(mode string, args ...string) map[string]any {
	cmd := []any{os.Args[0]}
	for _, a := range args {
		cmd = append(cmd, a)
	}
	// GORACE: a -race binary otherwise sleeps 1s at exit.
	return map[string]any{"command": cmd, "env": map[string]any{"JOBS_TEST_HELPER": mode, "GORACE": "atexit_sleep_ms=0"},
		"show_env": []any{"JOBS_TEST_HELPER", "GORACE"}}
}

func TestExecEnvironmentAndArgv(t *testing.T) {
	t.Setenv("JOBS_PARENT_VAR", "from-parent")
	t.Setenv("SLOTLOCK_FENCING_TOKEN", "999") // must be overridden by the run's
	t.Setenv("SLOTLOCK_REDIS__PASSWORD", "redis-secret")
	dir := t.TempDir()
	params := helperCommand("args", "two words", "$HOME", "*", "a;b", `"q"`)
	params["env"].(map[string]any)["EXTRA"] = "x y"
	params["show_args"] = []any{1, 2, 3, 4, 5} // arguments are hidden in the output unless shown
	params["show_env"] = []any{"EXTRA", "JOBS_TEST_HELPER", "GORACE"}
	params["inherit_env"] = []any{"JOBS_PARENT_VAR", "JOBS_UNSET_VAR"}
	params["dir"] = dir
	run, logs := testRun(t)
	if err := mustJob(t, "exec", params).Run(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	line := logs.Event(t, "exec.output")
	if line["exit_code"] != 0.0 || line["job"] != "nightly-report" || line["level"] != "INFO" {
		t.Fatalf("exec.output line: %v", line)
	}
	var got struct {
		Args []string
		Cwd  string
		Env  map[string]string
	}
	if err := json.Unmarshal([]byte(line["stdout"].(string)), &got); err != nil {
		t.Fatalf("stdout %q: %v", line["stdout"], err)
	}
	wantArgs := []string{"two words", "$HOME", "*", "a;b", `"q"`}
	if strings.Join(got.Args, "|") != strings.Join(wantArgs, "|") {
		t.Fatalf("argv = %q, want %q (no shell splitting or expansion)", got.Args, wantArgs)
	}
	realDir, _ := filepath.EvalSymlinks(dir)
	if got.Cwd != dir && got.Cwd != realDir {
		t.Fatalf("cwd = %q, want %q", got.Cwd, dir)
	}
	want := map[string]string{
		"SLOTLOCK_JOB":           "nightly-report",
		"SLOTLOCK_SLOT":          "2026-11-29T10:00:05Z",
		"SLOTLOCK_RUN_ID":        "r-123",
		"SLOTLOCK_REPLICA":       "replica-a",
		"SLOTLOCK_FENCING_TOKEN": "42",
		"SLOTLOCK_ATTEMPT":       "2",
		"EXTRA":                  "x y",
		"JOBS_PARENT_VAR":        "from-parent",
	}
	for k, v := range want {
		if got.Env[k] != v {
			t.Errorf("env %s = %q, want %q", k, got.Env[k], v)
		}
	}
	if v, ok := got.Env["SLOTLOCK_REDIS__PASSWORD"]; ok {
		t.Errorf("slotlock's configuration override SLOTLOCK_REDIS__PASSWORD=%q leaked into the job", v)
	}

	manual := run
	manual.Manual, manual.Slot = true, time.Time{}
	logs.buf.Reset()
	if err := mustJob(t, "exec", helperCommand("args")).Run(context.Background(), manual); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.Event(t, "exec.output")["stdout"].(string), `"SLOTLOCK_SLOT":"manual"`) {
		t.Fatal("a manual run's SLOTLOCK_SLOT is not \"manual\"")
	}
}

func TestExecNonZeroExit(t *testing.T) {
	run, logs := testRun(t)
	err := mustJob(t, "exec", helperCommand("fail")).Run(context.Background(), run)
	if err == nil {
		t.Fatal("exit code 3 did not fail the run")
	}
	for _, want := range []string{"exited with code 3", "boom: disk full"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	line := logs.Event(t, "exec.output")
	if line["exit_code"] != 3.0 || line["level"] != "WARN" {
		t.Fatalf("exec.output line: %v", line)
	}
	if line["stdout"] != "some output\n" || line["stderr"] != "first line\nboom: disk full\n" {
		t.Fatalf("output not captured: stdout %q stderr %q", line["stdout"], line["stderr"])
	}
}

// Exit 75, the fence recipes' refusal of a stale token, is error class
// stale_token (what history records); another non-zero exit is not.
func TestExecStaleTokenExit(t *testing.T) {
	class := func(err error) string {
		var c interface{ ErrorClass() string }
		if errors.As(err, &c) {
			return c.ErrorClass()
		}
		return ""
	}
	run, _ := testRun(t)
	err := mustJob(t, "exec", helperCommand("stale")).Run(context.Background(), run)
	if err == nil || class(err) != "stale_token" {
		t.Fatalf("exit 75: err %v, class %q; want stale_token", err, class(err))
	}
	for _, want := range []string{"exited with code 75", "a newer run wrote first"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	run, _ = testRun(t)
	if err := mustJob(t, "exec", helperCommand("fail")).Run(context.Background(), run); class(err) == "stale_token" {
		t.Fatalf("exit 3 classed stale_token: %v", err)
	}
	// The recipe as shipped: sh, exit 75 on a refusal.
	run, _ = testRun(t)
	err = mustJob(t, "exec", map[string]any{"command": []any{"sh", "-c", "exit 75"}}).Run(context.Background(), run)
	if class(err) != "stale_token" {
		t.Fatalf("sh exit 75: err %v, class %q; want stale_token", err, class(err))
	}
}

func TestExecStartFailure(t *testing.T) {
	run, _ := testRun(t)
	j := mustJob(t, "exec", map[string]any{"command": []any{"/nonexistent/program"}})
	if err := j.Run(context.Background(), run); err == nil || !strings.Contains(err.Error(), "/nonexistent/program") {
		t.Fatalf("missing program: %v", err)
	}
	// A dir that is gone is refused by the factory (TestExecFactoryErrors);
	// one removed after validation fails the run, naming the directory,
	// not the program.
	dir := filepath.Join(t.TempDir(), "work")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	j = mustJob(t, "exec", map[string]any{"command": []any{os.Args[0]}, "dir": dir})
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := j.Run(context.Background(), run); err == nil || !strings.Contains(err.Error(), "working directory (params.dir): no such directory: "+dir) {
		t.Fatalf("missing dir: %v", err)
	}
}

func TestExecOutputTailCapped(t *testing.T) {
	run, logs := testRun(t)
	if err := mustJob(t, "exec", helperCommand("flood")).Run(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	line := logs.Event(t, "exec.output")
	out := line["stdout"].(string)
	if len(out) > execTailBytes || len(out) < execTailBytes-10 {
		t.Fatalf("stdout tail is %d bytes, want about %d", len(out), execTailBytes)
	}
	if !strings.HasSuffix(out, "END-OF-OUTPUT") {
		t.Fatalf("tail does not end with the last output: ...%q", out[len(out)-40:])
	}
	if line["stdout_bytes"] != float64(100*1024+len("END-OF-OUTPUT")) {
		t.Fatalf("stdout_bytes = %v", line["stdout_bytes"])
	}
	errTail := line["stderr"].(string)
	if len(errTail) > execTailBytes || !strings.HasPrefix(errTail, "é") {
		t.Fatalf("stderr tail %d bytes, starts %q", len(errTail), errTail[:4])
	}
}

func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	_, state, ok := procStat(pid)
	return !ok || state == 'Z' || state == 'X'
}

func TestExecCancelKillsWholeGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	params := helperCommand("tree")
	params["env"].(map[string]any)["PID_FILE"] = pidFile
	params["kill_grace"] = "300ms"
	j := mustJob(t, "exec", params)
	run, logs := testRun(t)
	cause := errors.New("lease lost")
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() { done <- j.Run(ctx, run) }()

	child, _ := strconv.Atoi(waitFile(pidFile + ".child"))
	grandchild, _ := strconv.Atoi(waitFile(pidFile + ".grandchild"))
	t.Cleanup(func() { syscall.Kill(grandchild, syscall.SIGKILL) })
	if processGone(child) || processGone(grandchild) {
		t.Fatal("processes not running before cancel")
	}
	start := time.Now()
	cancel(cause)
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel (hung on the grandchild's pipes?)")
	}
	if !errors.Is(err, cause) {
		t.Fatalf("Run = %v, want it to wrap the cancel cause", err)
	}
	// The grandchild ignores SIGTERM: only SIGKILL after the grace ends it.
	if took := time.Since(start); took < 250*time.Millisecond {
		t.Fatalf("returned after %v, before the kill grace", took)
	}
	if !processGone(child) {
		t.Errorf("child %d survived the cancel", child)
	}
	if !processGone(grandchild) {
		t.Errorf("grandchild %d (TERM-ignoring) survived the cancel", grandchild)
	}
	if line := logs.Event(t, "exec.output"); line["level"] != "WARN" {
		t.Fatalf("exec.output after cancel: %v", line)
	}
}

func TestExecLeftoverProcessesDoNotOutliveRun(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	params := helperCommand("tree")
	params["env"].(map[string]any)["PID_FILE"] = pidFile
	params["env"].(map[string]any)["LEADER_EXITS"] = "1"
	params["kill_grace"] = "200ms"
	run, logs := testRun(t)
	done := make(chan error, 1)
	go func() { done <- mustJob(t, "exec", params).Run(context.Background(), run) }()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run hung on a leftover process holding its stdout")
	}
	if err != nil {
		t.Fatalf("leader exited 0, run = %v", err)
	}
	grandchild, _ := strconv.Atoi(waitFile(pidFile + ".grandchild"))
	t.Cleanup(func() { syscall.Kill(grandchild, syscall.SIGKILL) })
	if !processGone(grandchild) {
		t.Fatalf("leftover grandchild %d still running after the run ended", grandchild)
	}
	if out := logs.Event(t, "exec.output")["stdout"]; out != "leader done\n" {
		t.Fatalf("stdout = %q", out)
	}
}

func TestExecAlreadyCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	run, _ := testRun(t)
	if err := mustJob(t, "exec", helperCommand("args")).Run(ctx, run); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run on a canceled ctx = %v", err)
	}
}

func TestExecFactoryErrors(t *testing.T) {
	f, _ := Lookup("exec")
	cases := []struct {
		params map[string]any
		want   []string
	}{
		{map[string]any{}, []string{"command: required"}},
		{map[string]any{"command": []any{}}, []string{"command: required"}},
		{map[string]any{"command": "ls -l"}, []string{`command: expected a list, got a string`}},
		{map[string]any{"command": []any{""}}, []string{"command[0]: the program must not be empty"}},
		{map[string]any{"command": []any{"ls"}, "shell": true}, []string{"shell: unknown key"}},
		{map[string]any{"command": []any{"ls"}, "env": map[string]any{"A=B": "x"}}, []string{"env.A=B: invalid variable name"}},
		{map[string]any{"command": []any{"ls"}, "kill_grace": "-1s"}, []string{"kill_grace: must not be negative"}},
		{map[string]any{"command": []any{"ls"}, "inherit_env": []any{"OK", "A=B"}}, []string{`inherit_env[1]: invalid variable name "A=B"`}},
		{map[string]any{"command": []any{"ls"}, "inherit_env": "PATH"}, []string{"inherit_env: expected a list"}},
		{map[string]any{"command": []any{"ls"}, "run_as_gid": 1}, []string{"run_as_gid: only used with run_as_uid"}},
		{map[string]any{"command": []any{"ls"}, "run_as_uid": -1}, []string{"run_as_uid:"}},
		{map[string]any{"command": []any{"ls"}, "kill_grace": 5}, []string{`kill_grace: expected a duration such as "30s"`}},
		{map[string]any{"command": []any{"ls", 1234}}, []string{"command[1]: expected a string, got an integer"}},
		{map[string]any{"command": []any{"ls"}, "env": map[string]any{"PIN": 123456}}, []string{"env.PIN: expected a string, got an integer"}},
		{map[string]any{"command": []any{"ls", "-l"}, "show_args": []any{2}}, []string{"show_args[0]: 2 is not the position"}},
		{map[string]any{"command": []any{"ls"}, "show_env": []any{"X"}}, []string{`show_env[0]: "X" is not a variable of env`}},
		{map[string]any{"commnd": []any{"ls"}, "dir": 1}, []string{`commnd: unknown key (did you mean "command"?)`, "dir: expected a string"}},
		// Found at validation, not at the first run.
		{map[string]any{"command": []any{"ls", "a\x00b"}}, []string{"command[1]: contains a NUL byte"}},
		{map[string]any{"command": []any{"l\x00s"}}, []string{"command[0]: contains a NUL byte"}},
		{map[string]any{"command": []any{"ls"}, "env": map[string]any{"K": "a\x00b"}}, []string{"env.K: the value contains a NUL byte"}},
		{map[string]any{"command": []any{"ls"}, "dir": "/nonexistent/dir"}, []string{"dir: no such directory: /nonexistent/dir"}},
		{map[string]any{"command": []any{"ls"}, "dir": os.Args[0]}, []string{"dir: not a directory: " + os.Args[0]}},
		{map[string]any{"command": []any{"ls"}, "dir": "/tm\x00p"}, []string{"dir: contains a NUL byte"}},
	}
	for _, tc := range cases {
		_, err := f(tc.params)
		if err == nil {
			t.Errorf("%v: no error", tc.params)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q lacks %q", tc.params, err, w)
			}
		}
	}
}
