package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBadInputRefused: the command-line and file inputs of issue #36 item 6
// that the command judges: each exits 2 with an error that says what is
// wrong, before anything is started or any store is asked.
func TestBadInputRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// Nodes nobody listens on: every case must be refused before a
	// connection is tried.
	nodes := redisNodesYAML([]string{freeAddr(t), freeAddr(t), freeAddr(t)})
	withNodes := writeConfig(t, nodes+`
http: {addr: ""}
jobs:
  - name: beat
    schedule: "* * * * * *"
    plugin: log
    params: {message: beat}
`)
	empty := writeConfig(t, "")
	comments := writeConfig(t, "# nothing here yet\n---\n")
	pwFIFO := writeConfig(t, "redis: {password_file: "+fifo+"}\n")
	longName := strings.Repeat("j", 70_000)

	cases := []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"validate: empty nodes override", []string{"SLOTLOCK_REDIS__NODES="}, []string{"validate", "--config", withNodes},
			[]string{"redis.nodes: SLOTLOCK_REDIS__NODES names no node", "would drop the 3 node(s) the file names"}},
		{"run: comma-only nodes override", []string{"SLOTLOCK_REDIS__NODES=,,,"}, []string{"run", "--config", withNodes},
			[]string{"redis.nodes: SLOTLOCK_REDIS__NODES names no node"}},
		{"validate: empty file", nil, []string{"validate", "--config", empty}, []string{empty + ": the configuration file is empty"}},
		{"validate: comments only", nil, []string{"validate", "--config", comments}, []string{comments + ": the configuration file is empty"}},
		{"run: empty file", nil, []string{"run", "--config", empty}, []string{empty + ": the configuration file is empty"}},
		{"validate: FIFO config", nil, []string{"validate", "--config", fifo}, []string{fifo + " is a named pipe (FIFO), not a regular file"}},
		{"run: FIFO config", nil, []string{"run", "--config", fifo}, []string{fifo + " is a named pipe (FIFO), not a regular file"}},
		{"run: FIFO password_file", nil, []string{"run", "--config", pwFIFO},
			[]string{"redis.password_file: cannot read the password: " + fifo + " is a named pipe (FIFO)"}},
		{"validate: /dev/zero config", nil, []string{"validate", "--config", "/dev/zero"}, []string{"/dev/zero is a character device"}},
		{"pause --for 0s", nil, []string{"pause", "--config", withNodes, "--for", "0s", "beat"},
			[]string{"slotlock pause: --for 0s: must be positive"}},
		{"pause --for negative", nil, []string{"pause", "--config", withNodes, "--for", "-5m", "beat"},
			[]string{"slotlock pause: --for -5m0s: must be positive"}},
		{"pause --reason too long", nil, []string{"pause", "--config", withNodes, "--reason", strings.Repeat("r", 100_000), "beat"},
			[]string{"slotlock pause: --reason: at most 1000 bytes, got 100000"}},
		{"history --outcome bogus", nil, []string{"history", "--config", withNodes, "--outcome", "bogus", "beat"},
			[]string{`--outcome "bogus": unknown outcome; want one of succeeded, failed, canceled, abandoned, skipped, missed`}},
		{"history --since the zero time", nil, []string{"history", "--config", withNodes, "--since", "0001-01-01T00:00:00Z", "beat"},
			[]string{`--since: "0001-01-01T00:00:00Z": before 1970-01-01T00:00:00Z`}},
		{"backfill --from the zero time", nil, []string{"backfill", "--config", withNodes, "--from", "0001-01-01T00:00:00Z", "--to", "2026-01-01T00:00:00Z", "beat"},
			[]string{`--from "0001-01-01T00:00:00Z": before 1970-01-01T00:00:00Z`}},
		{"trigger: 70 KB job name", nil, []string{"trigger", "--config", withNodes, longName},
			[]string{`no job named "jjjj`, "… (70000 bytes)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			out, errOut, code := slotlock(t, tc.env, tc.args...)
			if code != 2 {
				t.Fatalf("exit %d, want 2; stdout %q stderr %q", code, out, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
			if strings.Contains(errOut, "using in-process locks") {
				t.Errorf("started on in-process locks:\n%s", errOut)
			}
			if len(errOut) > 2000 {
				t.Errorf("stderr of %d bytes: an echo is not bounded", len(errOut))
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
}

// TestEmptyConfigRejectedOnReload: an empty file is refused at start
// (TestBadInputRefused) and on reload alike; the jobs in force go on.
func TestEmptyConfigRejectedOnReload(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.yaml")
	writeAtomic(t, path, `log: {format: json, level: info}
http: {addr: ""}
shutdown: {grace: 1s}
jobs:
  - name: beat
    schedule: "* * * * * *"
    plugin: log
    params: {message: beat}
`)
	p := startReplica(t, path, "SLOTLOCK_REPLICA=r1")
	waitFor(t, 10*time.Second, "a run", func() bool { return p.countRuns("beat") > 0 })
	writeAtomic(t, path, "# emptied\n")
	waitFor(t, 10*time.Second, "config.rejected", func() bool { return len(p.events("config.rejected")) == 1 })
	if errs := strs(p.events("config.rejected")[0]["errors"]); !strings.Contains(strings.Join(errs, "\n"), "the configuration file is empty") {
		t.Errorf("config.rejected: %v", errs)
	}
	before := p.countRuns("beat")
	waitFor(t, 5*time.Second, "runs after the rejection", func() bool { return p.countRuns("beat") > before })
	if code, _ := p.stop(t, 15*time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM", code)
	}
	_ = os.Remove(path)
}
