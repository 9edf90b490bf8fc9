//go:build linux

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking/redistest"
	hist "github.com/slotlock/slotlock/scheduler/history"
)

// A fleet that is not slotlock's: two replicas of examples/embed, a
// service that embeds the scheduler and runs its own function "report"
// every second, declared in no file, on three real redis-server nodes. On
// another machine, in a directory with no config.yaml and with only
// SLOTLOCK_REDIS__NODES set, the command sees it: `status` lists the job
// with the schedule the services run and both replicas; `history report`,
// after the services stopped, lists every slot a service printed as
// succeeded, by that service, with the token it printed — and no slot twice.
// Without the variable the command exits 2 naming where to say where the
// fleet is; a config.yaml in the working directory that declares the job
// with another schedule is used, and one warning line names both schedules.
func TestCommandOnEmbeddedFleetEnvOnly(t *testing.T) {
	requireSuite(t)
	embed := buildEmbed(t)
	rc, err := redistest.New(3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rc.Close() })
	nodes := strings.Join(rc.Addrs(), ",")
	dir := t.TempDir()

	services := map[string]*proc{}
	for _, name := range []string{"svc-a", "svc-b"} {
		cmd := exec.Command(embed, "-redis", nodes, "-addr", "127.0.0.1:0", "-replica", name)
		cmd.Env = cleanEnv()
		cmd.Stdout = create(t, filepath.Join(dir, name+".out"))
		cmd.Stderr = create(t, filepath.Join(dir, name+".log"))
		p, err := startProc(name, cmd)
		if err != nil {
			t.Fatal(err)
		}
		services[name] = p
		t.Cleanup(p.kill)
	}
	waitUntil(t, 30*time.Second, "five reports", func() bool { return len(reports(t, dir)) >= 5 })

	env := []string{"SLOTLOCK_REDIS__NODES=" + nodes}
	out, errOut, code := command(t, t.TempDir(), env, "status", "--json", "report")
	if code != 0 {
		t.Fatalf("status with SLOTLOCK_REDIS__NODES only: exit %d\n%s", code, errOut)
	}
	var st hist.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	if len(st.Jobs) != 1 || st.Jobs[0].Job != "report" || st.Jobs[0].Schedule != "@every 1s" {
		t.Fatalf("status lists %+v, want the job report on @every 1s", st.Jobs)
	}
	alive := map[string]bool{}
	for _, r := range st.Replicas {
		alive[r.Replica] = true
	}
	if !alive["svc-a"] || !alive["svc-b"] {
		t.Errorf("status lists the replicas %v, want svc-a and svc-b", alive)
	}

	for name, p := range services {
		if _, err := p.terminate(15 * time.Second); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	printed := reports(t, dir)
	out, errOut, code = command(t, t.TempDir(), env, "history", "--json", "--limit", "10000", "report")
	if code != 0 {
		t.Fatalf("history with SLOTLOCK_REDIS__NODES only: exit %d\n%s", code, errOut)
	}
	checkHistory(t, out, printed)

	_, errOut, code = command(t, t.TempDir(), nil, "history", "report")
	if code != 2 || !strings.Contains(errOut, "--config") || !strings.Contains(errOut, "SLOTLOCK_CONFIG") ||
		!strings.Contains(errOut, "SLOTLOCK_REDIS__NODES") {
		t.Errorf("history with neither a file nor the variable: exit %d, want 2 naming --config, SLOTLOCK_CONFIG and SLOTLOCK_REDIS__NODES\n%s", code, errOut)
	}

	withFile := t.TempDir()
	yaml := "jobs:\n  - name: report\n    schedule: \"@every 2s\"\n    plugin: log\n    params: {message: report}\n"
	if err := os.WriteFile(filepath.Join(withFile, "config.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = command(t, withFile, env, "history", "report")
	want := `slotlock history: warning: job "report": the configuration's definition differs from the one the fleet publishes: ` +
		`schedule "@every 2s" in the configuration, "@every 1s" on the fleet; using the configuration's`
	if code != 0 || !strings.Contains(errOut, want+"\n") || strings.Count(errOut, "warning") != 1 {
		t.Errorf("history with a config.yaml that differs: exit %d, want 0 and one line\n%s\ngot:\n%s", code, want, errOut)
	}
}

// report is one line examples/embed printed: "report SLOT token N".
type report struct {
	replica string
	token   uint64
}

// reports reads the slots the services printed, failing on a slot printed
// twice.
func reports(t *testing.T, dir string) map[string]report {
	t.Helper()
	out := map[string]report{}
	for _, name := range []string{"svc-a", "svc-b"} {
		b, err := os.ReadFile(filepath.Join(dir, name+".out"))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			var slot string
			var token uint64
			if _, err := fmt.Sscanf(sc.Text(), "report %s token %d", &slot, &token); err != nil {
				continue // a line still being written
			}
			if prev, ok := out[slot]; ok {
				t.Fatalf("slot %s printed twice: by %s (token %d) and %s (token %d)", slot, prev.replica, prev.token, name, token)
			}
			out[slot] = report{replica: name, token: token}
		}
	}
	return out
}

// checkHistory checks that the history document lists every printed slot
// as succeeded by its printer with its token, and no slot twice.
func checkHistory(t *testing.T, doc string, printed map[string]report) {
	t.Helper()
	var h struct {
		Job     string       `json:"job"`
		Entries []hist.Entry `json:"entries"`
	}
	if err := json.Unmarshal([]byte(doc), &h); err != nil {
		t.Fatalf("history --json: %v\n%s", err, doc)
	}
	seen := map[string]hist.Entry{}
	for _, e := range h.Entries {
		if _, dup := seen[e.Slot]; dup {
			t.Errorf("slot %s twice in the history", e.Slot)
		}
		seen[e.Slot] = e
	}
	for slot, r := range printed {
		e, ok := seen[slot]
		switch {
		case !ok:
			t.Errorf("slot %s, printed by %s, is not in the history", slot, r.replica)
		case e.Outcome != hist.OutcomeSucceeded || e.Replica != r.replica || e.Token != r.token:
			t.Errorf("slot %s: history says %s by %s token %d; %s printed it with token %d", slot, e.Outcome, e.Replica, e.Token, r.replica, r.token)
		}
	}
	t.Logf("%d slots printed, %d history entries", len(printed), len(h.Entries))
}

// command runs `slotlock ARGS...` in dir with this process's environment
// but slotlock's own variables, plus env; it fails the test when the
// command does not finish within a minute.
func command(t *testing.T, dir string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bins.Slotlock, args...)
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	p, err := startProc("slotlock "+args[0], cmd)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		p.kill()
		t.Fatalf("slotlock %s did not finish within a minute", args[0])
	}
	return out.String(), errb.String(), p.exitCode()
}

// buildEmbed builds examples/embed for this test alone (the other
// scenarios do not run it).
func buildEmbed(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "embed")
	cmd := exec.Command("go", "build", "-o", bin, "./examples/embed")
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/embed: %v\n%s", err, out)
	}
	return bin
}

func create(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// waitUntil polls cond until it holds, failing the test after timeout.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
