package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slotlock/slotlock/internal/config"
)

// Hot reload of the real binary: the file rewritten (the watch) and
// SIGHUP; a valid file's jobs in force, its hash in the log and /metrics;
// an invalid one rejected with all its errors while the jobs run on; a
// setting that needs a restart reported; a Kubernetes ConfigMap's symlink
// swap seen.

// writeAtomic replaces path as editors do: a new file renamed over it.
func writeAtomic(t *testing.T, path, text string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// hashOf is the definitions hash slotlock computes for the file text.
func hashOf(t *testing.T, text string) string {
	t.Helper()
	cfg, err := config.LoadData("config.yaml", []byte(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.DefinitionsHash()
}

// strs reads a log attribute that is a list of strings.
func strs(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// countRuns counts run.started lines of job.
func (p *replicaProc) countRuns(job string) int {
	n := 0
	for _, e := range p.events("run.started") {
		if e["job"] == job {
			n++
		}
	}
	return n
}

func TestReloadFileAndSIGHUP(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	ledger := filepath.Join(dir, "ledger")
	head := fmt.Sprintf("log: {format: json, level: debug}\nhttp: {addr: %q}\nshutdown: {grace: 5s}\n", addr)
	tick := `
  - name: tick
    schedule: "* * * * * *"
    plugin: log
    params: {message: tick}
`
	v1 := head + "jobs:" + tick + fmt.Sprintf(`
  - name: gone
    schedule: "*/2 * * * * *"
    plugin: exec
    params:
      command: ["/bin/sh", "-c", "echo start >> %[1]s; sleep 1.5; echo end >> %[1]s"]
`, ledger)
	v2 := head + "jobs:" + tick + `
  - name: added
    schedule: "* * * * * *"
    plugin: log
    params: {message: added}
`
	writeAtomic(t, path, v1)
	p := startReplica(t, path, "SLOTLOCK_REPLICA=r1")
	waitFor(t, 10*time.Second, "a run of gone", func() bool { return p.countRuns("gone") > 0 })

	// The file rewritten while gone runs: gone removed, added added.
	time.Sleep(200 * time.Millisecond)
	writeAtomic(t, path, v2)
	waitFor(t, 10*time.Second, "config.reloaded", func() bool { return len(p.events("config.reloaded")) == 1 })
	ev := p.events("config.reloaded")[0]
	if ev["config_hash"] != hashOf(t, v2) || ev["previous_hash"] != hashOf(t, v1) || ev["trigger"] != "file" ||
		!slices.Equal(strs(ev["added"]), []string{"added"}) || !slices.Equal(strs(ev["removed"]), []string{"gone"}) ||
		len(strs(ev["changed"])) != 0 || ev["level"] != "INFO" {
		t.Errorf("config.reloaded: %v", ev)
	}
	_, metrics := httpGet("http://" + addr + "/metrics")
	if want := fmt.Sprintf(`slotlock_config_info{hash=%q} 1`, hashOf(t, v2)); !strings.Contains(metrics, want) ||
		strings.Contains(metrics, hashOf(t, v1)) {
		t.Errorf("/metrics after the reload lacks %s or still has the old hash:\n%s", want, grep(metrics, "slotlock_config_info"))
	}
	waitFor(t, 5*time.Second, "a run of the added job", func() bool { return p.countRuns("added") > 0 })
	// gone's last run ended normally, and gone ran no more.
	goneRuns := p.countRuns("gone")
	time.Sleep(2500 * time.Millisecond)
	if n := p.countRuns("gone"); n != goneRuns {
		t.Errorf("gone started %d runs after its removal", n-goneRuns)
	}
	b, _ := os.ReadFile(ledger)
	if strings.Count(string(b), "start") != strings.Count(string(b), "end") || len(p.events("run.canceled")) != 0 {
		t.Errorf("the removed job's run did not end normally: ledger %q, %d run.canceled", b, len(p.events("run.canceled")))
	}

	// An invalid file, written in place: rejected with both its errors;
	// the jobs run on.
	bad := head + "colour: blue\njobs:" + tick + `
  - name: broken
    schedule: "0 61 * * * *"
    plugin: log
    params: {message: x}
`
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "config.rejected", func() bool { return len(p.events("config.rejected")) == 1 })
	rej := p.events("config.rejected")[0]
	errs := strs(rej["errors"])
	if len(errs) != 2 || !strings.Contains(strings.Join(errs, "\n"), "minute 61") ||
		!strings.Contains(strings.Join(errs, "\n"), "colour") || rej["level"] != "ERROR" ||
		rej["config_hash"] != hashOf(t, v2) || rej["trigger"] != "file" {
		t.Errorf("config.rejected: %v", rej)
	}
	before := p.countRuns("added")
	waitFor(t, 5*time.Second, "runs after the rejection", func() bool { return p.countRuns("added") > before+1 })

	// SIGHUP reloads even an unchanged file.
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "config.rejected after SIGHUP", func() bool { return len(p.events("config.rejected")) == 2 })
	if tr := p.events("config.rejected")[1]["trigger"]; tr != "sighup" {
		t.Errorf("second config.rejected: trigger %v", tr)
	}

	// Settings that only a restart applies: reported, and the jobs reload.
	v3 := strings.Replace(v2, "shutdown: {grace: 5s}", "shutdown: {grace: 7s}\nlock: {ttl: 20s}", 1)
	writeAtomic(t, path, v3)
	waitFor(t, 10*time.Second, "config.restart_needed", func() bool { return len(p.events("config.restart_needed")) == 1 })
	warn := p.events("config.restart_needed")[0]
	if !slices.Equal(strs(warn["settings"]), []string{"lock.ttl", "shutdown.grace"}) || warn["level"] != "WARN" {
		t.Errorf("config.restart_needed: %v", warn)
	}
	if n := len(p.events("config.reloaded")); n != 2 {
		t.Errorf("%d config.reloaded lines, want 2", n)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "config.reloaded after SIGHUP", func() bool { return len(p.events("config.reloaded")) == 3 })
	if ev := p.events("config.reloaded")[2]; ev["trigger"] != "sighup" || ev["config_hash"] != hashOf(t, v2) {
		t.Errorf("config.reloaded after SIGHUP: %v", ev)
	}
	if code, _ := p.stop(t, 15*time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM", code)
	}
}

// grep returns the lines of text that contain s.
func grep(text, s string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestReloadConfigMapSwap: a Kubernetes ConfigMap volume — config.yaml a
// link to ..data/config.yaml, ..data a link to a timestamped directory
// that an update replaces by swapping the link — is followed, twice.
func TestReloadConfigMapSwap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	job := func(name string) string {
		return fmt.Sprintf("log: {format: json}\nhttp: {addr: \"\"}\njobs:\n  - name: %s\n    schedule: \"* * * * * *\"\n    plugin: log\n    params: {message: hi}\n", name)
	}
	publish := func(gen int, text string) {
		t.Helper()
		ts := filepath.Join(dir, fmt.Sprintf("..2026_12_01_00_00_0%d.000", gen))
		if err := os.Mkdir(ts, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ts, "config.yaml"), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(dir, "..data_tmp")
		if err := os.Symlink(filepath.Base(ts), tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
		if gen > 1 {
			_ = os.RemoveAll(filepath.Join(dir, fmt.Sprintf("..2026_12_01_00_00_0%d.000", gen-1)))
		}
	}
	publish(1, job("one"))
	path := filepath.Join(dir, "config.yaml")
	if err := os.Symlink(filepath.Join("..data", "config.yaml"), path); err != nil {
		t.Fatal(err)
	}
	p := startReplica(t, path, "SLOTLOCK_REPLICA=r1")
	waitFor(t, 10*time.Second, "a run of one", func() bool { return p.countRuns("one") > 0 })
	for i, name := range []string{"two", "three"} {
		publish(i+2, job(name))
		waitFor(t, 10*time.Second, "config.reloaded", func() bool { return len(p.events("config.reloaded")) == i+1 })
		if ev := p.events("config.reloaded")[i]; ev["config_hash"] != hashOf(t, job(name)) || ev["trigger"] != "file" {
			t.Errorf("reload %d: %v", i+1, ev)
		}
		waitFor(t, 5*time.Second, "a run of "+name, func() bool { return p.countRuns(name) > 0 })
	}
	if code, _ := p.stop(t, 15*time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM", code)
	}
}

// TestReloadCalendarFile: a job whose calendar file excludes today runs
// nothing; the file edited and SIGHUP sent, the job is reported changed
// (its calendar is part of its definition: a new hash) and runs from its
// next slot.
func TestReloadCalendarFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	dates := filepath.Join(dir, "closed.yaml")
	now := time.Now().UTC()
	closed := fmt.Sprintf("- %s\n- %s\n", now.Format(time.DateOnly), now.AddDate(0, 0, 1).Format(time.DateOnly))
	writeAtomic(t, dates, closed)
	writeAtomic(t, path, fmt.Sprintf(`log: {format: json, level: debug}
http: {addr: %q}
shutdown: {grace: 5s}
calendars:
  - name: closed
    exclude: {file: closed.yaml}
jobs:
  - name: tick
    schedule: "* * * * * *"
    plugin: log
    params: {message: tick}
  - name: shop
    schedule: "* * * * * *"
    plugin: log
    params: {message: shop}
    calendar: closed
`, freeAddr(t)))
	p := startReplica(t, path, "SLOTLOCK_REPLICA=r1")
	waitFor(t, 10*time.Second, "three runs of tick", func() bool { return p.countRuns("tick") >= 3 })
	if n := p.countRuns("shop"); n != 0 {
		t.Fatalf("the job whose calendar excludes today ran %d times", n)
	}

	writeAtomic(t, dates, "- 2000-01-01\n") // the watch reloads on config.yaml alone: SIGHUP applies a calendar file
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "config.reloaded", func() bool { return len(p.events("config.reloaded")) == 1 })
	ev := p.events("config.reloaded")[0]
	if !slices.Equal(strs(ev["changed"]), []string{"shop"}) || ev["config_hash"] == ev["previous_hash"] {
		t.Errorf("config.reloaded: %v", ev)
	}
	waitFor(t, 5*time.Second, "a run of shop", func() bool { return p.countRuns("shop") > 0 })
	if code, _ := p.stop(t, 15*time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM", code)
	}
}
