package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/slotlock/slotlock/locking"
)

// readiness pings the lock stores in the background and remembers whether
// a majority answered. It logs once per change of the quorum's state, not
// per ping.
type readiness struct {
	locker   locking.Locker
	metrics  *metrics
	log      *slog.Logger
	interval time.Duration

	ready   atomic.Bool
	mu      sync.Mutex
	lastErr error
}

func newReadiness(l locking.Locker, m *metrics, log *slog.Logger, interval time.Duration) *readiness {
	return &readiness{locker: l, metrics: m, log: log, interval: interval}
}

// check pings once and records the outcome.
func (r *readiness) check(ctx context.Context) {
	st, err := r.locker.Ping(ctx)
	if ctx.Err() != nil {
		return
	}
	ok := err == nil
	was := r.ready.Swap(ok)
	r.metrics.ready.Set(b2f(ok))
	r.mu.Lock()
	r.lastErr = err
	r.mu.Unlock()
	// Node state changes are logged by the lock layer itself (once each
	// way); here they only feed the gauges.
	for _, n := range st {
		r.metrics.nodeUp.WithLabelValues(n.Addr).Set(b2f(n.Up))
	}
	switch {
	case ok && !was:
		r.log.Info("ready: lock quorum reachable", "mode", r.locker.Mode())
	case !ok && was:
		r.log.Warn("not ready: lock quorum unreachable; slots are skipped until it returns", "error", err.Error())
	}
}

// run pings every interval until ctx ends. While the quorum is unreachable
// it pings more often (starting at interval/4) so readiness comes back
// quickly, but never more than the interval apart.
func (r *readiness) run(ctx context.Context) {
	first := true
	for {
		r.check(ctx)
		if ctx.Err() != nil {
			return
		}
		if first && !r.ready.Load() {
			// The first failure is logged by check only on a change; say
			// it once at start too.
			r.log.Warn("not ready at start: lock quorum unreachable; retrying", "error", errString(r.err()))
		}
		first = false
		wait := r.interval
		if !r.ready.Load() {
			wait = max(r.interval/4, 50*time.Millisecond)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

func (r *readiness) err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastErr
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// opsServer serves /healthz, /readyz and /metrics.
type opsServer struct {
	srv *http.Server
	ln  net.Listener
}

func newOpsServer(addr string, healthy func() error, ready *readiness, m *metrics) (*opsServer, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := healthy(); err != nil {
			http.Error(w, "unhealthy: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if !ready.ready.Load() {
			msg := "not ready: lock quorum unreachable"
			if err := ready.err(); err != nil {
				msg += ": " + err.Error()
			}
			http.Error(w, msg, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg}))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("http.addr %q: %w", addr, err)
	}
	return &opsServer{
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second},
		ln:  ln,
	}, nil
}

func (s *opsServer) Addr() string { return s.ln.Addr().String() }

func (s *opsServer) serve(log *slog.Logger) {
	if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error("ops http server stopped", "error", err.Error())
	}
}

func (s *opsServer) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
}
