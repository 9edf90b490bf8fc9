package cli

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/slotlock/slotlock/internal/ui"
	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler"
)

// OpsOptions says what an Ops serves besides the probes and the metrics.
type OpsOptions struct {
	// StatusPage serves the read-only status page and its JSON API on every
	// path but /healthz, /readyz and /metrics, as http.ui does for
	// `slotlock run`. The page reads the lock stores and shows job names,
	// schedules and run ids: mount it where only operators reach it.
	StatusPage bool
}

// Ops is the operations side of a scheduler embedded in a service, the
// same as `slotlock run` serves on http.addr: an http.Handler answering
//
//   - GET /healthz: 200 "ok" while the scheduler loop is alive, else 503;
//   - GET /readyz: 200 while a majority of the lock stores answers, else 503;
//   - GET /metrics: the slotlock_* series of the contract (runs, skips,
//     lock latency, readiness, ...) and the Go runtime's, in the Prometheus
//     text format, from a registry of the Ops's own;
//   - with OpsOptions.StatusPage, the status page at every other path.
//
// Mount it on the service's own mux, under a prefix if need be:
//
//	mux.Handle("/ops/", http.StripPrefix("/ops", ops))
//
// Build it with NewOps, then run the scheduler with Ops.Run.
type Ops struct {
	sched   *scheduler.Scheduler
	metrics *metrics
	ready   *readiness
	handler http.Handler
}

// NewOps builds the scheduler of cfg (scheduler.New) with its metrics
// wired to the returned Ops, which serves the scheduler's ops endpoints.
// cfg.Metrics must be nil: the Ops takes that hook. The status page shows
// cfg.Jobs; after Scheduler.Reload it keeps showing them.
func NewOps(cfg scheduler.Config, opts OpsOptions) (*scheduler.Scheduler, *Ops, error) {
	if cfg.Metrics != nil {
		return nil, nil, errors.New("cli.NewOps: cfg.Metrics is set; the Ops exports the scheduler's metrics itself")
	}
	m := newMetrics()
	names := make([]string, len(cfg.Jobs))
	for i, j := range cfg.Jobs {
		names[i] = j.Name
	}
	m.initJobs(names)
	cfg.Metrics = m
	s, err := scheduler.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	// The hash the heartbeat carries: cfg's, or the scheduler's own of
	// cfg.Jobs when cfg has none.
	cfg.DefinitionsHash = s.DefinitionsHash()
	m.setConfigHash(cfg.DefinitionsHash)
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	ready := newReadiness(cfg.Locker, m, log, time.Second)
	var page http.Handler
	if opts.StatusPage {
		page = embeddedPage(cfg, s)
	}
	return s, &Ops{sched: s, metrics: m, ready: ready, handler: opsMux(s.Healthy, ready, m, page)}, nil
}

// embeddedPage is the status page over cfg's jobs and stores.
func embeddedPage(cfg scheduler.Config, s *scheduler.Scheduler) http.Handler {
	clock := cfg.Clock
	if clock == nil {
		clock = locking.SystemClock(0)
	}
	keep := cfg.HistoryKeep
	switch {
	case keep == 0:
		keep = scheduler.DefaultHistoryKeep
	case keep < 0:
		keep = 0 // no history: the page's own bound
	}
	return ui.Handler(ui.Backend{Locker: cfg.Locker, Specs: cfg.Jobs, Hash: cfg.DefinitionsHash,
		Now: clock.Now, SettleAfter: s.SettleAfter, MaxSlots: keep})
}

// ServeHTTP answers the probes, the metrics and the status page.
func (o *Ops) ServeHTTP(w http.ResponseWriter, r *http.Request) { o.handler.ServeHTTP(w, r) }

// Run runs the scheduler until ctx ends and it has shut down
// (Scheduler.Run), and meanwhile pings the lock stores every second for
// /readyz and the slotlock_ready and slotlock_redis_node_up gauges. The
// probes and the metrics stay answered during the shutdown grace. Call it
// instead of Scheduler.Run: without it /readyz never turns ready.
func (o *Ops) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	wg.Go(func() { o.ready.run(bg) })
	o.metrics.schedulerRun.Set(1)
	err := o.sched.Run(ctx)
	o.metrics.schedulerRun.Set(0)
	stop()
	wg.Wait()
	return err
}
