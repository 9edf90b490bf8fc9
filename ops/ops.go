package ops

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/slotlock/slotlock/internal/ui"
	"github.com/slotlock/slotlock/scheduler"
)

// Options says what a Handler serves besides the probes and the metrics.
// The zero value serves the probes and the metrics only.
type Options struct {
	// StatusPage serves the read-only status page and its JSON API on every
	// path but /healthz, /readyz and /metrics, as http.ui does for
	// `slotlock run`. The page reads the lock stores and shows job names,
	// schedules and run ids: mount it where only operators reach it.
	StatusPage bool
	// Metrics is the Metrics the scheduler reports to. Nil: the
	// scheduler's Config.Metrics when it is a *Metrics; otherwise a Metrics
	// of the handler's own, which exports the readiness and the Go
	// runtime's series but no job's (the scheduler does not report to it).
	Metrics *Metrics
}

// readyEvery is how old the last ping may be before a probe or a scrape
// pings again (a quarter of it while the quorum is unreachable).
const readyEvery = time.Second

// Handler returns the ops endpoints of s:
//
//   - GET /healthz: 200 "ok" while the scheduler's loop is alive and
//     ticking (Scheduler.Healthy), else 503;
//   - GET /readyz: 200 while the scheduler runs and a majority of the lock
//     stores answers, else 503 (before Run, during the shutdown grace,
//     without a quorum); the body says how many nodes answered;
//   - GET /metrics: the Metrics (Options.Metrics), in the Prometheus text
//     format;
//   - with Options.StatusPage, the status page at every other path (else
//     404).
//
// Readiness, the job series and the status page follow s: a reload's jobs
// and hash (Scheduler.Reload) show from the next request on.
func Handler(s *scheduler.Scheduler, opts Options) http.Handler {
	cfg := s.Config()
	m, fed := opts.Metrics, true
	if m == nil {
		m, fed = cfg.Metrics.(*Metrics)
		if !fed {
			m = NewMetrics()
		}
	}
	h := &handler{s: s, metrics: m, fed: fed, statusPage: opts.StatusPage,
		ready: newReadiness(cfg.Locker, m, cfg.Logger, readyEvery)}
	h.sync(cfg)
	mux := http.NewServeMux()
	if opts.StatusPage {
		mux.HandleFunc("/", h.page)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := s.Healthy(); err != nil {
			http.Error(w, "unhealthy: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", h.readyz)
	prom := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		h.refresh(r.Context())
		prom.ServeHTTP(w, r)
	})
	return mux
}

// handler is one Handler's state.
type handler struct {
	s          *scheduler.Scheduler
	metrics    *Metrics
	fed        bool // the scheduler reports to metrics: its job series are exported
	statusPage bool
	ready      *readiness

	mu   sync.Mutex
	hash string       // the definitions the job series and the page show
	ui   http.Handler // the status page of those definitions; nil without one
}

// refresh brings what the metrics say of the scheduler up to date: its
// definitions, whether it runs, and whether the quorum answers.
func (h *handler) refresh(ctx context.Context) {
	if h.s.DefinitionsHash() != h.current() {
		h.sync(h.s.Config())
	}
	h.metrics.schedulerRun.Set(b2f(h.s.Healthy() == nil))
	h.ready.state(ctx)
}

func (h *handler) current() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.hash
}

// sync takes cfg's definitions: their job series, their hash, their
// status page.
func (h *handler) sync(cfg scheduler.Config) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.fed {
		names := make([]string, len(cfg.Jobs))
		for i, j := range cfg.Jobs {
			names[i] = j.Name
		}
		h.metrics.initJobs(names)
	}
	if cfg.DefinitionsHash != "" {
		h.metrics.setConfigHash(cfg.DefinitionsHash)
	}
	if h.statusPage {
		h.ui = statusPage(cfg, h.s)
	}
	h.hash = cfg.DefinitionsHash
}

// statusPage is the status page over cfg's jobs and stores.
func statusPage(cfg scheduler.Config, s *scheduler.Scheduler) http.Handler {
	keep := max(cfg.HistoryKeep, 0) // negative: no history, the page's own bound
	return ui.Handler(ui.Backend{Locker: cfg.Locker, Specs: cfg.Jobs, Hash: cfg.DefinitionsHash,
		Now: cfg.Clock.Now, SettleAfter: s.SettleAfter, MaxSlots: keep,
		Yield: ui.QuietPhase(cfg.Clock.Now, ui.DefaultQuietFrom, ui.DefaultQuietTo)})
}

func (h *handler) page(w http.ResponseWriter, r *http.Request) {
	if h.s.DefinitionsHash() != h.current() {
		h.sync(h.s.Config())
	}
	h.mu.Lock()
	page := h.ui
	h.mu.Unlock()
	page.ServeHTTP(w, r)
}

func (h *handler) readyz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if err := h.s.Healthy(); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "not ready: %v\n", err)
		return
	}
	ok, body := h.ready.state(r.Context())
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	fmt.Fprint(w, body)
}
