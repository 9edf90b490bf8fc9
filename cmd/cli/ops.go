package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
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
	up, all int // nodes that answered the last ping, of how many
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
	up := 0
	for _, n := range st {
		if n.Up {
			up++
		}
	}
	r.mu.Lock()
	r.lastErr = err
	r.up, r.all = up, len(st)
	r.mu.Unlock()
	// Node state changes are logged by the lock layer itself (once each
	// way); here they only feed the gauges.
	// By index in redis.nodes, not address: /metrics is read by whoever
	// reaches the ops port, and the address is in the configuration.
	for i, n := range st {
		r.metrics.nodeUp.WithLabelValues(strconv.Itoa(i)).Set(b2f(n.Up))
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

// body is what /readyz answers: the state and node counts only. The
// errors behind it (node addresses, refused AUTH, TLS failures) are for
// the log, not for whoever can reach the port.
func (r *readiness) body() string {
	r.mu.Lock()
	up, all := r.up, r.all
	r.mu.Unlock()
	state := "ready"
	if !r.ready.Load() {
		state = "not ready: lock quorum unreachable"
	}
	if r.locker.Mode() == "local" {
		return state + " (in-process locks)\n"
	}
	if all == 0 {
		return state + "\n"
	}
	return fmt.Sprintf("%s (%d of %d lock nodes up, %d down)\n", state, up, all, all-up)
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

// opsMux routes /healthz, /readyz and /metrics, and with a page the
// status page and its API (any other path; nil: those are 404). It is the
// one home of the ops endpoints: `slotlock run` serves it on http.addr, an
// embedding service through Ops.
func opsMux(healthy func() error, ready *readiness, m *metrics, page http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	if page != nil {
		mux.Handle("/", page)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := healthy(); err != nil {
			http.Error(w, "unhealthy: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if !ready.ready.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprint(w, ready.body())
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg}))
	return mux
}

// opsServer serves the ops endpoints (opsMux) on http.addr.
type opsServer struct {
	srv *http.Server
	ln  net.Listener
}

func newOpsServer(addr string, handler http.Handler) (*opsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("http.addr %q: %w", addr, err)
	}
	return &opsServer{
		// WriteTimeout: no answer (a status page window included, whose
		// reads ui bounds at 15s) holds a connection longer.
		srv: &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
			WriteTimeout: 20 * time.Second, IdleTimeout: time.Minute},
		ln: ln,
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
