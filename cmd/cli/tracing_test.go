package cli_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking/redistest"
)

// ledgerLines returns the lines of a file jobs append to.
func ledgerLines(path string) []string {
	b, _ := os.ReadFile(path)
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// traceparentJob is an every-second exec job that appends its run id, its
// slot and [$TRACEPARENT] to ledger.
func traceparentJob(name, ledger string) string {
	return fmt.Sprintf(`
  - name: %s
    schedule: "* * * * * *"
    plugin: exec
    params:
      command: ["/bin/sh", "-c", "echo \"$SLOTLOCK_RUN_ID $SLOTLOCK_SLOT [$TRACEPARENT]\" >> %s"]`, name, ledger)
}

// checkRunTrace checks that the exporter delivered the run of a ledger line
// (run id, slot, [traceparent]): a slotlock.run span whose ids are the
// traceparent's, with the run's attributes, under the replica's
// slotlock.slot span for the slot, whose children are the lock calls.
func checkRunTrace(t *testing.T, spans []receivedSpan, job, replica, line string, nodes int) {
	t.Helper()
	f := strings.Fields(line)
	require.Len(t, f, 3, "ledger line %q", line)
	runID, slot := f[0], f[1]
	tp := strings.Split(strings.Trim(f[2], "[]"), "-")
	require.Len(t, tp, 4, "TRACEPARENT %s: 00-<trace id>-<span id>-<flags>", f[2])
	require.Equal(t, "00", tp[0])
	require.Equal(t, "01", tp[3], "sampled")

	runs := named(spans, "slotlock.run", "slotlock.run_id", runID)
	require.Len(t, runs, 1, "run span of run %s", runID)
	run := runs[0]
	require.Equal(t, run.traceID(), tp[1], "TRACEPARENT carries the run span's trace id")
	require.Equal(t, run.spanID(), tp[2], "and its span id, as the parent")
	require.Equal(t, job, run.attr("slotlock.job"))
	require.Equal(t, slot, run.attr("slotlock.slot"))
	require.Equal(t, replica, run.attr("slotlock.replica"))
	require.Equal(t, "succeeded", run.attr("slotlock.outcome"))
	require.Equal(t, "1", run.attr("slotlock.attempt"))
	token := run.attr("slotlock.fencing_token")
	require.NotContains(t, []string{"", "0"}, token)

	attempts := named(spans, "slotlock.slot", "slotlock.job", job, "slotlock.slot", slot, "slotlock.replica", replica)
	require.Len(t, attempts, 1, "attempt span of %s %s", job, slot)
	at := attempts[0]
	require.Equal(t, at.spanID(), run.parentID(), "the run is a child of the slot attempt")
	require.Empty(t, at.ParentSpanId, "an attempt is a root span")
	for k, v := range map[string]string{"slotlock.run_id": runID, "slotlock.fencing_token": token,
		"slotlock.outcome": "succeeded", "slotlock.attempt": "1"} {
		require.Equal(t, v, at.attr(k), "attempt attribute %s", k)
	}
	// (A round retried after a slow node is a span of its own: the names
	// are compared as a set.)
	kinds := map[string]bool{}
	for _, n := range childrenOf(spans, at) {
		kinds[n] = true
	}
	require.Equal(t, map[string]bool{"locking.Claim": true, "locking.Acquire": true, "slotlock.run": true,
		"locking.MarkDone": true, "locking.Release": true}, kinds,
		"the slot's claim, the job lease, the run, the done marker, the job lease's release")
	ok := map[string]bool{}
	for _, s := range spans {
		if s.parentID() != at.spanID() || !strings.HasPrefix(s.Name, "locking.") {
			continue
		}
		require.Equal(t, fmt.Sprint(nodes), s.attr("locking.nodes"), "%s", s.Name)
		require.Equal(t, fmt.Sprint(nodes/2+1), s.attr("locking.quorum"), "%s", s.Name)
		require.True(t, strings.HasPrefix(s.attr("locking.key"), job+":"), "%s key %s", s.Name, s.attr("locking.key"))
		if s.attr("locking.result") == "ok" {
			ok[s.Name] = true
		}
	}
	require.Len(t, ok, 4, "every lock call of the attempt succeeded in the end: %v", ok)
	claimed := named(spans, "locking.Claim", "locking.lease_id", runID)
	require.Len(t, claimed, 1, "the claim that won names the run id")
	require.Equal(t, at.spanID(), claimed[0].parentID())
}

// A replica with OTEL_EXPORTER_OTLP_ENDPOINT exports its slot attempts,
// runs and lock calls over OTLP/HTTP to the endpoint; the exec job's
// TRACEPARENT and the http job's traceparent carry the run's span. Real
// Redis nodes, the real binary, an in-process OTLP receiver.
func TestTracingExportsSpansOverOTLP(t *testing.T) {
	t.Parallel()
	nodes := redistest.Start(t, 3)
	recv := startOTLPHTTP(t)
	var hookMu sync.Mutex
	var hookTP []string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hookMu.Lock()
		hookTP = append(hookTP, r.Header.Get("Traceparent"))
		hookMu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(hook.Close)
	ledger := filepath.Join(t.TempDir(), "ledger")
	cfg := writeConfig(t, redisNodesYAML(nodes.Addrs())+`
log: {format: json}
http: {addr: ""}
jobs:`+traceparentJob("traced", ledger)+fmt.Sprintf(`
  - name: hook
    schedule: "* * * * * *"
    plugin: http
    params: {url: %q}
`, hook.URL+"/hook"))
	p := startReplica(t, cfg, "SLOTLOCK_REPLICA=r1", "OTEL_EXPORTER_OTLP_ENDPOINT="+recv.URL,
		"OTEL_BSP_SCHEDULE_DELAY=100", "OTEL_SERVICE_NAME=slotlock-test",
		"OTEL_RESOURCE_ATTRIBUTES=deployment.environment.name=test")
	waitFor(t, 20*time.Second, "two exec runs and two hook calls", func() bool {
		hookMu.Lock()
		defer hookMu.Unlock()
		return len(ledgerLines(ledger)) >= 2 && len(hookTP) >= 2
	})
	// Batches leave while the replica runs, not only at exit.
	waitFor(t, 10*time.Second, "run spans exported while running", func() bool {
		_, spans := recv.received()
		return len(named(spans, "slotlock.run", "slotlock.job", "traced")) > 0
	})
	if code, _ := p.stop(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
	require.True(t, strings.Contains(p.rawLog(), `"msg":"tracing: exporting spans over OTLP"`), "the start line says tracing is on")

	// The spans still buffered at SIGTERM were flushed before the exit.
	_, spans := recv.received()
	lines := ledgerLines(ledger)
	for _, line := range lines {
		checkRunTrace(t, spans, "traced", "r1", line, 3)
	}
	run := named(spans, "slotlock.run")[0]
	require.Equal(t, "slotlock-test", run.resource["service.name"], "OTEL_SERVICE_NAME")
	require.Equal(t, "test", run.resource["deployment.environment.name"], "OTEL_RESOURCE_ATTRIBUTES")
	require.Equal(t, "r1", run.resource["service.instance.id"])

	hookMu.Lock()
	defer hookMu.Unlock()
	for _, h := range hookTP {
		tp := strings.Split(h, "-")
		require.Len(t, tp, 4, "traceparent header %q", h)
		var found bool
		for _, s := range named(spans, "slotlock.run", "slotlock.job", "hook") {
			found = found || (s.traceID() == tp[1] && s.spanID() == tp[2])
		}
		require.True(t, found, "traceparent %s names no run span of the hook job", h)
	}
}

// OTEL_EXPORTER_OTLP_PROTOCOL=grpc exports over OTLP/gRPC.
func TestTracingExportsOverGRPC(t *testing.T) {
	t.Parallel()
	recv := startOTLPGRPC(t)
	ledger := filepath.Join(t.TempDir(), "ledger")
	cfg := writeConfig(t, `
log: {format: json}
http: {addr: ""}
jobs:`+traceparentJob("traced", ledger)+"\n")
	p := startReplica(t, cfg, "SLOTLOCK_REPLICA=g1", "OTEL_EXPORTER_OTLP_ENDPOINT="+recv.URL,
		"OTEL_EXPORTER_OTLP_PROTOCOL=grpc", "OTEL_BSP_SCHEDULE_DELAY=100")
	waitFor(t, 20*time.Second, "two exec runs", func() bool { return len(ledgerLines(ledger)) >= 2 })
	if code, _ := p.stop(t, 30*time.Second); code != 0 {
		t.Fatalf("exit %d", code)
	}
	_, spans := recv.received()
	for _, line := range ledgerLines(ledger) {
		checkRunTrace(t, spans, "traced", "g1", line, 1)
	}
}

// Tracing is off without an OTLP endpoint, and with one when
// OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none: nothing reaches
// the endpoint, the job gets no TRACEPARENT, and the log says nothing of
// tracing.
func TestTracingOff(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER"} {
		if os.Getenv(k) != "" {
			t.Skipf("%s is set in the test's environment", k)
		}
	}
	recv := startOTLPHTTP(t)
	for name, env := range map[string][]string{
		"no endpoint":                   {"OTEL_SERVICE_NAME=slotlock-test"},
		"sdk disabled":                  {"OTEL_EXPORTER_OTLP_ENDPOINT=" + recv.URL, "OTEL_SDK_DISABLED=true"},
		"exporter none":                 {"OTEL_EXPORTER_OTLP_ENDPOINT=" + recv.URL, "OTEL_TRACES_EXPORTER=none"},
		"sdk disabled, traces endpoint": {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=" + recv.URL + "/v1/traces", "OTEL_SDK_DISABLED=TRUE"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ledger := filepath.Join(t.TempDir(), "ledger")
			cfg := writeConfig(t, "log: {format: json}\nhttp: {addr: \"\"}\njobs:"+traceparentJob("untraced", ledger)+"\n")
			p := startReplica(t, cfg, append([]string{"SLOTLOCK_REPLICA=off"}, env...)...)
			waitFor(t, 20*time.Second, "two exec runs", func() bool { return len(ledgerLines(ledger)) >= 2 })
			if code, _ := p.stop(t, 30*time.Second); code != 0 {
				t.Fatalf("exit %d", code)
			}
			for _, line := range ledgerLines(ledger) {
				require.True(t, strings.HasSuffix(line, " []"), "the job got a TRACEPARENT: %q", line)
			}
			require.NotContains(t, p.rawLog(), "tracing:")
		})
	}
	t.Cleanup(func() {
		if n, _ := recv.received(); n != 0 {
			t.Errorf("%d export requests reached the endpoint with tracing off", n)
		}
	})
}

// A tracing setting the binary cannot honour is a configuration error
// (exit 2) naming the variable, not a silently missing trace.
func TestTracingConfigErrors(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, "http: {addr: \"\"}\njobs:\n  - {name: tick, schedule: \"@daily\", plugin: log, params: {message: tick}}\n")
	for _, tc := range []struct{ env, says string }{
		{"OTEL_EXPORTER_OTLP_PROTOCOL=http/json OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:9", "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT=collector:4318", "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"OTEL_TRACES_EXPORTER=zipkin", "OTEL_TRACES_EXPORTER"},
	} {
		_, errOut, code := slotlock(t, strings.Fields(tc.env), "run", "--config", cfg)
		require.Equal(t, 2, code, "%s: stderr %s", tc.env, errOut)
		require.Contains(t, errOut, tc.says)
	}
}
