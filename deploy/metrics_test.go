package deploy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slotlock/slotlock/internal/secrettest"
	"github.com/slotlock/slotlock/locking/redistest"
)

// monitoringFiles are the files whose metric names must be real.
var monitoringFiles = []string{
	"prometheus/slotlock-alerts.yaml",
	"prometheus/slotlock-alerts_test.yaml", // the synthetic series must look like the real ones
	"prometheus/slotlock-thresholds.yaml",
	"grafana/slotlock-dashboard.json",
}

var metricName = regexp.MustCompile(`\b(?:slotlock|process)_[a-z_]+\b`)

// Every metric the alert rules, their tests and the dashboard name is
// served on /metrics by the real binary, as operators scrape it: built
// from ./cmd/slotlock and run with one Redis node (for the node gauges)
// and a job that succeeds every second (for the series that appear with
// the first run: histograms, last outcome).
func TestMonitoringNamesRealMetrics(t *testing.T) {
	want := map[string][]string{} // name -> files naming it
	for _, f := range monitoringFiles {
		for _, n := range metricName.FindAllString(string(readFile(t, f)), -1) {
			if !slices.Contains(want[n], f) {
				want[n] = append(want[n], f)
			}
		}
	}
	for _, n := range []string{"slotlock_slots_missed_total", "slotlock_job_last_success_timestamp_seconds",
		"slotlock_job_last_outcome", "slotlock_config_info", "slotlock_start_delay_seconds_bucket",
		"slotlock_lock_acquire_seconds_bucket", "slotlock_redis_node_up"} {
		if len(want[n]) == 0 {
			t.Errorf("no monitoring file uses %s", n)
		}
	}

	addr := startReplica(t)
	var served map[string]bool
	deadline := time.Now().Add(30 * time.Second)
	for {
		served = scrape(t, "http://"+addr+"/metrics")
		var missing []string
		for n, files := range want {
			if !served[n] {
				missing = append(missing, fmt.Sprintf("%s (in %s)", n, strings.Join(files, ", ")))
			}
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			slices.Sort(missing)
			t.Fatalf("not served on /metrics after 30 s:\n  %s", strings.Join(missing, "\n  "))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// scrape returns the names /metrics serves: every sample's name (with a
// histogram's _bucket, _sum and _count) and every family's.
func scrape(t *testing.T, url string) map[string]bool {
	t.Helper()
	// No idle connections left behind for the goroutine check.
	c := http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return nil // not listening yet
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	names := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if f, ok := strings.CutPrefix(line, "# TYPE "); ok {
			names[strings.Fields(f)[0]] = true
		} else if line != "" && line[0] != '#' {
			names[strings.FieldsFunc(line, func(r rune) bool { return r == '{' || r == ' ' })[0]] = true
		}
	}
	return names
}

// startReplica builds slotlock, starts `slotlock run` against one fresh
// redis-server with its ops server on a free port, and stops it (SIGTERM,
// then SIGKILL) when the test ends. It returns the ops address.
func startReplica(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "slotlock")
	build := exec.Command("go", "build", "-o", bin, "github.com/slotlock/slotlock/cmd/slotlock")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	nodes := redistest.Start(t, 1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	err = os.WriteFile(cfg, []byte(fmt.Sprintf(`
log: {format: json}
http: {addr: %q}
redis:
  nodes: [{addr: %q}]
jobs:
  - name: tick
    schedule: "* * * * * *"
    plugin: log
    params: {message: tick}
`, addr, nodes.Addrs()[0])), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cmd := exec.Command(bin, "run", "--config", cfg)
	cmd.Env = append(os.Environ(), "SLOTLOCK_REPLICA=monitoring-test")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		secrettest.Capture(logs.Bytes())
		if t.Failed() {
			t.Logf("replica log:\n%s", logs.String())
		}
	})
	return addr
}
