package ops_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/ops"
	"github.com/slotlock/slotlock/scheduler"
)

// Each endpoint of the handler, asked once before the scheduler runs: the
// probes say it is not running yet, the metrics are there from the start,
// and the JSON API lists the jobs with their schedules.
func Example() {
	quiet := slog.New(slog.DiscardHandler)
	lk := locking.NewLocal(locking.Options{Replica: "svc-1", Logger: quiet})
	defer lk.Close()
	s, err := scheduler.New(scheduler.Config{
		Locker:  lk,
		Logger:  quiet,
		Metrics: ops.NewMetrics(),
		Jobs: []scheduler.JobSpec{{Name: "sync", Spec: "@every 1m",
			Job: jobs.Func(func(ctx context.Context, run jobs.Run) error { return nil })}},
	})
	if err != nil {
		log.Fatal(err)
	}
	h := ops.Handler(s, ops.Options{StatusPage: true})
	ask := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}

	code, body := ask("/healthz")
	fmt.Println("/healthz", code, strings.TrimSpace(body))
	code, _ = ask("/readyz")
	fmt.Println("/readyz", code)
	code, body = ask("/metrics")
	fmt.Println("/metrics", code, strings.Contains(body, "slotlock_scheduler_running 0"))
	code, body = ask("/")
	fmt.Println("/", code, strings.Contains(body, `<tr data-job="sync">`))
	code, body = ask("/api/v1/jobs")
	var doc struct {
		Total int
		Jobs  []struct{ Job, Schedule string }
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		log.Fatal(err)
	}
	fmt.Println("/api/v1/jobs", code, doc.Total, doc.Jobs[0].Job, doc.Jobs[0].Schedule)
	// Output:
	// /healthz 503 unhealthy: scheduler: not running
	// /readyz 503
	// /metrics 200 true
	// / 200 true
	// /api/v1/jobs 200 1 sync @every 1m
}
