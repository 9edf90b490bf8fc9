package ops_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/ops"
	"github.com/slotlock/slotlock/scheduler"
)

// get answers one request from h, with no network.
func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

// embedConfig is one job every second on in-process locks.
func embedConfig(t *testing.T, job jobs.Job) (scheduler.Config, locking.Locker) {
	t.Helper()
	sched, err := scheduler.ParseSchedule("@every 1s", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	lk := locking.NewLocal(locking.Options{Replica: "svc-1", Logger: slog.New(slog.DiscardHandler)})
	return scheduler.Config{
		Locker:  lk,
		Logger:  slog.New(slog.DiscardHandler),
		Metrics: ops.NewMetrics(),
		Jobs: []scheduler.JobSpec{{Name: "tick", Spec: "@every 1s", Schedule: sched, Job: job,
			Timeout: 5 * time.Second}},
	}, lk
}

// An embedding service gets the probes, the metrics and the status page
// of `slotlock run` from one handler, and they follow the scheduler's life.
func TestOpsServesAnEmbeddedScheduler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var runs atomic.Int32
		cfg, lk := embedConfig(t, jobs.Func(func(context.Context, jobs.Run) error {
			runs.Add(1)
			return nil
		}))
		defer lk.Close()
		s, err := scheduler.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		// cfg has no DefinitionsHash: the scheduler's own, of its jobs, is
		// the one the heartbeat carries and the metrics export.
		hash := s.DefinitionsHash()
		if len(hash) != 12 {
			t.Fatalf("DefinitionsHash of an embedded scheduler = %q, want 12 hex digits", hash)
		}
		h := ops.Handler(s, ops.Options{StatusPage: true})
		if code, _ := get(t, h, "/readyz"); code != http.StatusServiceUnavailable {
			t.Errorf("/readyz before Run = %d, want 503", code)
		}
		ctx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		time.Sleep(2500 * time.Millisecond)
		synctest.Wait()

		if n := runs.Load(); n != 2 {
			t.Errorf("%d runs in 2.5s of @every 1s, want 2", n)
		}
		if code, body := get(t, h, "/healthz"); code != http.StatusOK || body != "ok\n" {
			t.Errorf("/healthz = %d %q, want 200 ok", code, body)
		}
		if code, body := get(t, h, "/readyz"); code != http.StatusOK || body != "ready (in-process locks)\n" {
			t.Errorf("/readyz = %d %q", code, body)
		}
		code, metrics := get(t, h, "/metrics")
		for _, want := range []string{
			`slotlock_runs_total{job="tick",outcome="succeeded"} 2`,
			`slotlock_scheduler_running 1`,
			`slotlock_ready 1`,
			`slotlock_config_info{hash="` + hash + `"} 1`,
		} {
			if code != http.StatusOK || !strings.Contains(metrics, want) {
				t.Errorf("/metrics (%d) lacks %s", code, want)
			}
		}
		if code, page := get(t, h, "/"); code != http.StatusOK || !strings.Contains(page, "<html") {
			t.Errorf("status page = %d, %.80q", code, page)
		}

		stop()
		if err := <-done; err != nil {
			t.Fatalf("Run = %v", err)
		}
		if code, _ := get(t, h, "/healthz"); code != http.StatusServiceUnavailable {
			t.Errorf("/healthz after Run = %d, want 503", code)
		}
		if _, metrics := get(t, h, "/metrics"); !strings.Contains(metrics, "slotlock_scheduler_running 0") {
			t.Error("slotlock_scheduler_running is not 0 after Run")
		}
	})
}

// Without Options.StatusPage only the probes and the metrics answer. A
// scheduler that reports to a Metrics of the service's own gets a handler
// whose /metrics has no job series: zeros it never moves would lie.
func TestOpsOptions(t *testing.T) {
	cfg, lk := embedConfig(t, jobs.Func(func(context.Context, jobs.Run) error { return nil }))
	defer lk.Close()
	s, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := ops.Handler(s, ops.Options{})
	if code, _ := get(t, h, "/"); code != http.StatusNotFound {
		t.Errorf("/ without StatusPage = %d, want 404", code)
	}
	if _, metrics := get(t, h, "/metrics"); !strings.Contains(metrics, `slotlock_runs_total{job="tick",outcome="succeeded"} 0`) {
		t.Errorf("/metrics of the scheduler's own Metrics lacks the job's series at zero")
	}
	cfg.Metrics = someMetrics{}
	s, err = scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	code, metrics := get(t, ops.Handler(s, ops.Options{}), "/metrics")
	if code != http.StatusOK || strings.Contains(metrics, `job="tick"`) || !strings.Contains(metrics, "slotlock_ready") {
		t.Errorf("/metrics (%d) with another Metrics: %.300s", code, metrics)
	}
}

// someMetrics is a Metrics hook of the service's own (never called here).
type someMetrics struct{ scheduler.Metrics }
