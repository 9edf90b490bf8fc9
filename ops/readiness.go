package ops

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// pingTimeout bounds one readiness ping, whatever the request's own
// deadline: a probe answers within it.
const pingTimeout = 5 * time.Second

// readiness pings the lock stores when asked (a probe, a scrape) and the
// last answer is older than interval — interval/4 while the quorum is
// unreachable, so readiness comes back quickly. A handler thus starts no
// goroutine of its own: nothing to run, nothing to stop. It logs once per
// change of the quorum's state, not per ping.
type readiness struct {
	locker   locking.Locker
	metrics  *Metrics
	log      *slog.Logger
	interval time.Duration

	mu      sync.Mutex // held across a ping: one at a time, the others reuse its answer
	checked time.Time  // when the last answer came; zero: never
	ready   bool
	lastErr error
	up, all int // nodes that answered the last ping, of how many
}

func newReadiness(l locking.Locker, m *Metrics, log *slog.Logger, interval time.Duration) *readiness {
	return &readiness{locker: l, metrics: m, log: log, interval: interval}
}

// state returns whether a majority answered and the /readyz body, pinging
// first if the last answer is stale.
func (r *readiness) state(ctx context.Context) (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	wait := r.interval
	if !r.ready {
		wait = max(r.interval/4, 50*time.Millisecond)
	}
	if r.checked.IsZero() || time.Since(r.checked) >= wait {
		r.check(ctx)
	}
	return r.ready, r.body()
}

// check pings once and records the outcome (r.mu held).
func (r *readiness) check(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	st, err := r.locker.Ping(ctx)
	if ctx.Err() != nil && err != nil {
		return // the request went away: no answer to record
	}
	ok, first := err == nil, r.checked.IsZero()
	was := r.ready
	r.checked, r.ready, r.lastErr = time.Now(), ok, err
	r.metrics.ready.Set(b2f(ok))
	up := 0
	for _, n := range st {
		if n.Up {
			up++
		}
	}
	r.up, r.all = up, len(st)
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
	case !ok && first:
		r.log.Warn("not ready at start: lock quorum unreachable; retrying", "error", err.Error())
	case !ok && was:
		r.log.Warn("not ready: lock quorum unreachable; slots are skipped until it returns", "error", err.Error())
	}
}

// body is what /readyz answers: the state and node counts only (r.mu
// held). The errors behind it (node addresses, refused AUTH, TLS
// failures) are for the log, not for whoever can reach the port.
func (r *readiness) body() string {
	state := "ready"
	if !r.ready {
		state = "not ready: lock quorum unreachable"
	}
	if r.locker.Mode() == "local" {
		return state + " (in-process locks)\n"
	}
	if r.all == 0 {
		return state + "\n"
	}
	return fmt.Sprintf("%s (%d of %d lock nodes up, %d down)\n", state, r.up, r.all, r.all-r.up)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
