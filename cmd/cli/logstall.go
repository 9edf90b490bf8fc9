package cli

import (
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// A replica's log lines are its audit trail, and writing one blocks when
// whatever reads its output stops taking them: a container runtime's
// blocking log driver, a log collector that is down, a full disk under the
// node's log files. Every goroutine that logs then waits — a run's end
// before it ends its leases, a claim before its run starts — while the
// leases' watchdogs, which never log, go on renewing them: the replica
// would keep its forbid jobs' leases, and the fleet would run none of
// their slots, for as long as its output stays blocked (the e2e scenario
// log_stall). A replica whose output has made no progress for half the
// lock TTL is therefore unfit: it takes no lease and renews none (its
// leases lapse and other replicas take its work over, as from a frozen
// replica) and /healthz says why, for the orchestrator to restart it. Its
// lines are kept: they are written, with their own times, once the
// output drains, and the replica goes on from there.

// logWatch is the log output, watched for writes that make no progress.
type logWatch struct {
	w     io.Writer
	clock locking.Clock
	after time.Duration // no progress for this long: unfit
	// pending writes, and when the output last made progress: a write
	// returned, or one began while none was pending.
	pending  atomic.Int64
	progress atomic.Int64 // unix nanoseconds
}

// stallAfter is how long the log output may make no progress before the
// replica is unfit: half the lock TTL, so that a replica whose output
// blocks holds its leases at most about one and a half TTLs.
func stallAfter(ttl time.Duration) time.Duration { return max(ttl/2, 100*time.Millisecond) }

func newLogWatch(w io.Writer, clock locking.Clock, after time.Duration) *logWatch {
	return &logWatch{w: w, clock: clock, after: after}
}

func (lw *logWatch) Write(p []byte) (int, error) {
	if lw.pending.Add(1) == 1 {
		lw.progress.Store(lw.clock.Now().UnixNano())
	}
	n, err := lw.w.Write(p)
	lw.progress.Store(lw.clock.Now().UnixNano())
	lw.pending.Add(-1)
	return n, err
}

// Fit is nil unless a write has been pending with no progress for
// lw.after (locking.Options.Fit, scheduler.Config.Fit).
func (lw *logWatch) Fit() error {
	if lw.pending.Load() == 0 {
		return nil
	}
	d := lw.clock.Now().Sub(time.Unix(0, lw.progress.Load()))
	if d < lw.after {
		return nil
	}
	return fmt.Errorf("log output blocked for %v (the limit is %v, half the lock TTL)", d.Round(time.Millisecond), lw.after)
}
