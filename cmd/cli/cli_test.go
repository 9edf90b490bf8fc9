package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking/redistest"
	"github.com/slotlock/slotlock/scheduler"
)

func TestVersion(t *testing.T) {
	out, _, code := slotlock(t, nil, "version")
	if code != 0 || !strings.Contains(out, "slotlock ") || !strings.Contains(out, "go1.") {
		t.Fatalf("version: code %d, output %q", code, out)
	}
}

func TestValidateRepoConfig(t *testing.T) {
	out, errOut, code := slotlock(t, nil, "validate", "--config", "../../config.yaml")
	if code != 0 {
		t.Fatalf("the repo's config.yaml is invalid (exit %d): %s", code, errOut)
	}
	if !strings.Contains(out, "valid") {
		t.Fatalf("validate output %q", out)
	}
}

func TestValidateListsEveryError(t *testing.T) {
	cfg := writeConfig(t, `
lock:
  ttl: 100ms
jobs:
  - name: report
    schedule: "0 61 * * *"
    plugin: log
  - name: Bad_Name
    schedule: "@every 1s"
    plugin: nosuchplugin
  - name: sync
    schedule: "* * * * *"
    schedul: "oops"
    plugin: log
    timezone: Mars/Olympus
`)
	_, errOut, code := slotlock(t, nil, "validate", "--config", cfg)
	if code != 2 {
		t.Fatalf("exit %d, want 2; stderr:\n%s", code, errOut)
	}
	for _, want := range []string{
		`jobs[0] "report": schedule "0 61 * * *": hour 61 out of range [0,23]`, // 5 fields: minute hour ...
		"jobs[1]", "name", "nosuchplugin",
		"jobs[2]", "schedul", "Mars/Olympus",
		"lock.ttl",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if n := len(strings.Split(strings.TrimSpace(errOut), "\n")); n < 5 {
		t.Errorf("want every error on its own line (>= 5 lines), got %d:\n%s", n, errOut)
	}
}

func TestValidateYAMLSyntaxErrorHasLine(t *testing.T) {
	cfg := writeConfig(t, "jobs:\n  - name: x\n    schedule: [unclosed\n")
	_, errOut, code := slotlock(t, nil, "validate", "--config", cfg)
	if code != 2 || !strings.Contains(errOut, "line") {
		t.Fatalf("exit %d, stderr %q; want 2 and a line number", code, errOut)
	}
}

func TestConfigFromEnvironment(t *testing.T) {
	cfg := writeConfig(t, "jobs:\n  - name: a\n    schedule: \"@every 1s\"\n    plugin: log\n")
	_, errOut, code := slotlock(t, []string{"SLOTLOCK_CONFIG=" + cfg, "SLOTLOCK_LOCK__TTL=-5s"}, "validate")
	if code != 2 || !strings.Contains(errOut, "lock.ttl") {
		t.Fatalf("SLOTLOCK_CONFIG / SLOTLOCK_LOCK__TTL not applied: exit %d, %q", code, errOut)
	}
}

func TestNextAcrossDST(t *testing.T) {
	cfg := writeConfig(t, `
jobs:
  - name: nightly
    schedule: "30 2 * * *"
    timezone: America/New_York
    plugin: log
    params: {message: nightly}
`)
	// Pretend it is noon in New York the day before spring forward
	// (2027-03-14 02:00 EST -> 03:00 EDT): the 02:30 slot does not exist
	// that night and must run once, at 03:00 EDT.
	ny, _ := time.LoadLocation("America/New_York")
	fake := time.Date(2027, 3, 13, 12, 0, 0, 0, ny)
	env := []string{fmt.Sprintf("SLOTLOCK_CLOCK_OFFSET=%dms", time.Until(fake).Milliseconds())}
	out, errOut, code := slotlock(t, env, "next", "--config", cfg, "-n", "3", "nightly")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"2027-03-14 03:00:00 EDT", "2027-03-14T07:00:00Z",
		"2027-03-15 02:30:00 EDT", "2027-03-15T06:30:00Z",
		"2027-03-16 02:30:00 EDT",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("next output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "2027-03-13") {
		t.Errorf("next printed a slot before the (shifted) now:\n%s", out)
	}
	if _, _, code := slotlock(t, env, "next", "--config", cfg, "nosuchjob"); code != 2 {
		t.Errorf("next of an unknown job: exit %d, want 2", code)
	}
}

// With a jitter, next adds the ACTUAL UTC column: the slot plus its
// offset, in milliseconds, as every replica computes it; the nominal
// columns stay. A slot nominally before now that starts after it is
// listed. A table of jobs without jitter keeps its four columns.
func TestNextShowsJitteredStarts(t *testing.T) {
	cfg := writeConfig(t, `
jobs:
  - name: jit
    schedule: "@every 60s"
    jitter: 50s
    plugin: log
    params: {message: jit}
  - name: plain
    schedule: "@every 60s"
    plugin: log
    params: {message: plain}
`)
	jitter := 50 * time.Second
	// A minute whose offset is large enough that "now", 5s after it (plus
	// the process's start-up), is still before its start.
	m := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	jit := scheduler.JobSpec{Name: "jit", Jitter: jitter}
	for jit.Due(m).Sub(m) < 15*time.Second {
		m = m.Add(time.Minute)
	}
	now := m.Add(5 * time.Second)
	env := []string{fmt.Sprintf("SLOTLOCK_CLOCK_OFFSET=%dms", time.Until(now).Milliseconds())}
	out, errOut, code := slotlock(t, env, "next", "--config", cfg, "-n", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 7 || strings.Join(strings.Fields(lines[0]), " ") != "JOB SCHEDULE ZONE TIME UTC ACTUAL UTC" {
		t.Fatalf("next output:\n%s", out)
	}
	for i := range 3 {
		sl := m.Add(time.Duration(i) * time.Minute)
		actual := jit.Due(sl)
		want := []string{"jit", "@every", "60s", sl.Format("2006-01-02"), sl.Format("15:04:05"), "UTC", "+00:00",
			sl.Format(time.RFC3339), actual.Format("2006-01-02T15:04:05.000Z07:00")}
		if got := strings.Fields(lines[1+i]); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("line %d:\n got %q\nwant %q", 1+i, got, want)
		}
		// plain's slots start at their nominal time.
		plain := m.Add(time.Duration(i+1) * time.Minute)
		if got := strings.Fields(lines[4+i]); len(got) != 9 || got[0] != "plain" || got[7] != plain.Format(time.RFC3339) ||
			got[8] != plain.Format("2006-01-02T15:04:05.000Z07:00") {
			t.Errorf("line %d: %q", 4+i, got)
		}
	}
	out, _, _ = slotlock(t, env, "next", "--config", cfg, "-n", "1", "plain")
	if strings.Contains(out, "ACTUAL") || len(strings.Fields(strings.Split(out, "\n")[1])) != 8 {
		t.Errorf("next of a job without jitter changed its format:\n%s", out)
	}
}

// With a calendar, next adds the CALENDAR column: the next N real slots,
// and between them one row per excluded local date (its first slot),
// marked excluded; the dates are the job's zone's. A job whose every slot
// is excluded has no further slots.
func TestNextMarksExcludedSlots(t *testing.T) {
	cfg := writeConfig(t, `
calendars:
  - name: holidays-de
    exclude: {dates: [2026-12-24, 2026-12-25], weekdays_only: true}
jobs:
  - name: report
    schedule: "0 30 0 * * *"
    timezone: Europe/Berlin
    plugin: log
    params: {message: report}
    calendar: holidays-de
  - name: weekend
    schedule: "0 0 12 * * SAT"
    plugin: log
    params: {message: weekend}
    calendar: holidays-de
`)
	berlin, _ := time.LoadLocation("Europe/Berlin")
	fake := time.Date(2026, 12, 23, 12, 0, 0, 0, berlin) // a Wednesday
	env := []string{fmt.Sprintf("SLOTLOCK_CLOCK_OFFSET=%dms", time.Until(fake).Milliseconds())}
	out, errOut, code := slotlock(t, env, "next", "--config", cfg, "-n", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := [][]string{
		{"JOB", "SCHEDULE", "ZONE", "TIME", "UTC", "CALENDAR"},
		// 24 Dec 00:30 CET is 23 Dec 23:30 UTC: excluded by its Berlin date.
		{"report", "0", "30", "0", "*", "*", "*", "2026-12-24", "00:30:00", "CET", "+01:00", "2026-12-23T23:30:00Z", "excluded", "(holidays-de:", "2026-12-24)"},
		{"report", "0", "30", "0", "*", "*", "*", "2026-12-25", "00:30:00", "CET", "+01:00", "2026-12-24T23:30:00Z", "excluded", "(holidays-de:", "2026-12-25)"},
		{"report", "0", "30", "0", "*", "*", "*", "2026-12-26", "00:30:00", "CET", "+01:00", "2026-12-25T23:30:00Z", "excluded", "(holidays-de:", "2026-12-26)"},
		{"report", "0", "30", "0", "*", "*", "*", "2026-12-27", "00:30:00", "CET", "+01:00", "2026-12-26T23:30:00Z", "excluded", "(holidays-de:", "2026-12-27)"},
		{"report", "0", "30", "0", "*", "*", "*", "2026-12-28", "00:30:00", "CET", "+01:00", "2026-12-27T23:30:00Z", "-"},
		{"report", "0", "30", "0", "*", "*", "*", "2026-12-29", "00:30:00", "CET", "+01:00", "2026-12-28T23:30:00Z", "-"},
		{"weekend", "0", "0", "12", "*", "*", "SAT", "2026-12-26", "12:00:00", "UTC", "+00:00", "2026-12-26T12:00:00Z", "excluded", "(holidays-de:", "2026-12-26)"},
		{"weekend", "0", "0", "12", "*", "*", "SAT", "2027-01-02", "12:00:00", "UTC", "+00:00", "2027-01-02T12:00:00Z", "excluded", "(holidays-de:", "2027-01-02)"},
		{"weekend", "0", "0", "12", "*", "*", "SAT", "(no", "further", "slots)"},
	}
	if len(lines) != len(want) {
		t.Fatalf("next output:\n%s", out)
	}
	for i, w := range want {
		if got := strings.Fields(lines[i]); strings.Join(got, " ") != strings.Join(w, " ") {
			t.Errorf("line %d:\n got %q\nwant %q", i, got, w)
		}
	}
}

func TestRunSIGTERMGivesRunningJobItsGrace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ledger := filepath.Join(dir, "ledger")
	cfg := writeConfig(t, fmt.Sprintf(`
log: {format: json, level: debug}
http: {addr: ""}
shutdown: {grace: 10s}
jobs:
  - name: slow
    schedule: "* * * * * *"
    plugin: exec
    params:
      command: ["/bin/sh", "-c", "echo start >> %[1]s; sleep 2; echo end >> %[1]s"]
`, ledger))
	p := startReplica(t, cfg, "SLOTLOCK_REPLICA=r1")
	waitFor(t, 10*time.Second, "run.started", func() bool { return len(p.events("run.started")) > 0 })
	code, took := p.stop(t, 10*time.Second)
	if code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0", code)
	}
	b, _ := os.ReadFile(ledger)
	if strings.Count(string(b), "start") != strings.Count(string(b), "end") {
		t.Fatalf("a running job was not given its grace to finish: ledger %q", b)
	}
	if len(p.events("run.succeeded")) == 0 {
		t.Fatalf("no run.succeeded after graceful stop (took %v)", took)
	}
	if n := len(p.events("run.canceled")); n != 0 {
		t.Fatalf("%d runs canceled although they fit in the grace", n)
	}
}

func TestRunSIGTERMCancelsAfterGrace(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, `
log: {format: json}
http: {addr: ""}
shutdown: {grace: 1s}
jobs:
  - name: endless
    schedule: "* * * * * *"
    plugin: exec
    params:
      command: ["sleep", "60"]
`)
	p := startReplica(t, cfg, "SLOTLOCK_REPLICA=r1")
	waitFor(t, 10*time.Second, "run.started", func() bool { return len(p.events("run.started")) > 0 })
	code, _ := p.stop(t, 15*time.Second)
	if code != 0 {
		t.Fatalf("exit code %d, want 0 whatever the jobs' outcome", code)
	}
	ev := p.events("run.canceled")
	if len(ev) == 0 || ev[0]["reason"] != "shutdown" {
		t.Fatalf("want run.canceled reason shutdown, got %v", ev)
	}
}

func TestReadyzFollowsRedisQuorum(t *testing.T) {
	t.Parallel()
	nodes := redistest.Start(t, 3)
	addr := freeAddr(t)
	cfg := writeConfig(t, redisNodesYAML(nodes.Addrs())+fmt.Sprintf(`
log: {format: json}
http: {addr: %q}
jobs:
  - name: tick
    schedule: "* * * * * *"
    plugin: log
    params: {message: tick}
`, addr))
	p := startReplica(t, cfg, "SLOTLOCK_REPLICA=r1")
	url := "http://" + addr
	waitFor(t, 10*time.Second, "/readyz 200", func() bool { c, _ := httpGet(url + "/readyz"); return c == 200 })
	if c, _ := httpGet(url + "/healthz"); c != 200 {
		t.Fatalf("/healthz = %d", c)
	}
	nodes.Node(1).Kill()
	nodes.Node(2).Kill()
	waitFor(t, 10*time.Second, "/readyz 503 with 2 of 3 nodes down", func() bool { c, _ := httpGet(url + "/readyz"); return c == 503 })
	if c, _ := httpGet(url + "/healthz"); c != 200 {
		t.Fatalf("/healthz = %d while Redis is down; the process is alive", c)
	}
	if err := nodes.Node(1).Restart(); err != nil {
		t.Fatal(err)
	}
	if err := nodes.Node(2).Restart(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "/readyz 200 after the nodes return", func() bool { c, _ := httpGet(url + "/readyz"); return c == 200 })
	// Runs resumed with the quorum: a run starts after the nodes came back.
	before := len(p.events("run.started"))
	waitFor(t, 10*time.Second, "runs after the quorum returned", func() bool { return len(p.events("run.started")) > before })
	if code, _ := p.stop(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
}

func TestMetricsExposeSeries(t *testing.T) {
	t.Parallel()
	addr := freeAddr(t)
	cfg := writeConfig(t, fmt.Sprintf(`
log: {format: json}
http: {addr: %q}
jobs:
  - name: ok
    schedule: "* * * * * *"
    plugin: log
    params: {message: hi}
  - name: bad
    schedule: "* * * * * *"
    plugin: exec
    params: {command: ["false"]}
`, addr))
	p := startReplica(t, cfg, "SLOTLOCK_REPLICA=r1")
	waitFor(t, 15*time.Second, "a few runs", func() bool {
		return len(p.events("run.succeeded")) >= 3 && len(p.events("run.failed")) >= 3
	})
	code, body := httpGet("http://" + addr + "/metrics")
	if code != 200 {
		t.Fatalf("/metrics = %d", code)
	}
	for _, want := range []string{
		`slotlock_runs_total{job="ok",outcome="succeeded"}`,
		`slotlock_runs_total{job="bad",outcome="failed"}`,
		`slotlock_start_delay_seconds_bucket{job="ok"`,
		`slotlock_run_duration_seconds_bucket{job="ok"`,
		`slotlock_lock_acquire_seconds_bucket{job="ok"`,
		`slotlock_leases_lost_total{job="ok"} 0`,
		`slotlock_slots_skipped_total`,
		`slotlock_ready 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
	p.stop(t, 30*time.Second)
}

func TestTriggerRespectsOverlapForbid(t *testing.T) {
	t.Parallel()
	nodes := redistest.Start(t, 3)
	dir := t.TempDir()
	ledger := filepath.Join(dir, "ledger")
	cfg := writeConfig(t, redisNodesYAML(nodes.Addrs())+fmt.Sprintf(`
log: {format: json, level: debug}
http: {addr: ""}
shutdown: {grace: 1s}
jobs:
  - name: long
    schedule: "* * * * * *"
    plugin: exec
    overlap: forbid
    params:
      command: ["/bin/sh", "-c", "echo \"$SLOTLOCK_SLOT $SLOTLOCK_FENCING_TOKEN\" >> %[1]s; sleep 30"]
  - name: manual-only
    schedule: "@daily"
    enabled: false
    plugin: exec
    params:
      command: ["/bin/sh", "-c", "echo \"$SLOTLOCK_SLOT $SLOTLOCK_FENCING_TOKEN $SLOTLOCK_JOB\" >> %[1]s"]
`, ledger))
	p := startReplica(t, cfg, "SLOTLOCK_REPLICA=r1")
	waitFor(t, 10*time.Second, "the scheduled run", func() bool { return len(p.events("run.started")) > 0 })

	_, errOut, code := slotlock(t, []string{"SLOTLOCK_REPLICA=manual"}, "trigger", "--config", cfg, "long")
	if code != 1 {
		t.Fatalf("trigger while a scheduled run holds the job: exit %d, want 1; stderr:\n%s", code, errOut)
	}
	if !strings.Contains(errOut, "overlap") {
		t.Errorf("trigger's reason does not say overlap: %s", errOut)
	}
	for _, line := range strings.Split(strings.TrimSpace(errOut), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("log.format json, but trigger wrote a line that is not JSON: %q", line)
		}
	}

	_, errOut, code = slotlock(t, []string{"SLOTLOCK_REPLICA=manual"}, "trigger", "--config", cfg, "manual-only")
	if code != 0 {
		t.Fatalf("trigger of an idle job: exit %d; stderr:\n%s", code, errOut)
	}
	b, _ := os.ReadFile(ledger)
	if !strings.Contains(string(b), "manual ") || !strings.Contains(string(b), "manual-only") {
		t.Fatalf("the manual run did not happen with SLOTLOCK_SLOT=manual: %q", b)
	}
	if _, _, code := slotlock(t, nil, "trigger", "--config", cfg, "nosuchjob"); code != 2 {
		t.Fatalf("trigger of an unknown job: exit %d, want 2", code)
	}
	p.stop(t, 30*time.Second)
}

// TestEntraWithoutIdentityIsNotAConfigError: with redis.auth: entra on a
// host that has no managed identity, run fails at start with exit 1 (a
// failure to start), not 2 (the configuration is valid). Parallel: the
// SDK's retries to the closed identity port take about 10 s of waiting.
func TestEntraWithoutIdentityIsNotAConfigError(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, `
http: {addr: ""}
redis:
  nodes: [{addr: "127.0.0.1:1"}]
  tls: true
  auth: entra
jobs:
  - name: a
    schedule: "@every 1s"
    plugin: log
    params: {message: x}
`)
	if _, errOut, code := slotlock(t, nil, "validate", "--config", cfg); code != 0 {
		t.Fatalf("validate: exit %d: %s", code, errOut)
	}
	// No identity endpoint here: point the SDK at a closed port so the
	// test does not depend on the host.
	env := []string{"IDENTITY_ENDPOINT=http://127.0.0.1:1/token", "IDENTITY_HEADER=x"}
	_, errOut, code := slotlock(t, env, "run", "--config", cfg)
	if code != 1 {
		t.Fatalf("run without a managed identity: exit %d, want 1; stderr:\n%s", code, errOut)
	}
	if !strings.Contains(errOut, "redis.auth entra") {
		t.Errorf("the error does not say what failed: %s", errOut)
	}
}
