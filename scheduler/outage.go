package scheduler

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// outage tracks lock-store trouble: while it lasts one goroutine pings the
// stores; when a majority answers (or any Acquire gets a definitive
// answer) the leases that could not be ended are ended and, under run_once,
// the latest slot each job skipped with no_quorum is recovered (under
// run_all, the slots it skipped so).
//
// The outage is the component that owns that state. It publishes the
// outage it saw through the fleet and hands each job's skipped slots to
// the misfire policy (recoverer). Outcomes hands it the ends the stores
// refused, and it ends them again through outcomes (ends): the one pair
// of components that call each other, because only the outage learns
// when the stores answer again, and only outcomes knows what an end
// writes.
type outage struct {
	*engine
	ends      leaseEnderThen
	fleet     outagePublisher
	recoverer outageRecoverer

	down    atomic.Bool
	mu      sync.Mutex
	probing bool
	pending map[string][]pendingEnd // by job
	since   time.Time               // the earliest work the outage hit (published when it ends)
}

// leaseEnderThen ends a lease as p says (outcomes.go): endLeaseThen
// hands a failure back to the outage, tryEnd returns it.
type leaseEnderThen interface {
	endLeaseThen(p pendingEnd)
	tryEnd(p *pendingEnd) error
}

// outagePublisher records an outage in the fleet log (fleet.go).
type outagePublisher interface {
	publishOutage(from, to time.Time)
}

// outageRecoverer recovers the slots of j skipped with no_quorum, first
// to last, as j's misfire policy says (misfire_outage.go).
type outageRecoverer interface {
	recoverOutage(j *job, first, last time.Time)
}

func newOutage(e *engine, ends leaseEnderThen, fleet outagePublisher, recoverer outageRecoverer) *outage {
	return &outage{engine: e, ends: ends, fleet: fleet, recoverer: recoverer, pending: map[string][]pendingEnd{}}
}

// markDown records that the stores had no majority for work due at at.
func (ot *outage) markDown(at time.Time) {
	ot.mu.Lock()
	if ot.since.IsZero() || at.Before(ot.since) {
		ot.since = at
	}
	ot.mu.Unlock()
	ot.down.Store(true)
}

func (ot *outage) retryEnd(p pendingEnd) {
	if p.doneTTL > 0 && ot.state.Load() == stateNew {
		ot.finishEnd(p)
		return
	}
	ot.mu.Lock()
	ot.pending[p.job] = append(ot.pending[p.job], p)
	ot.mu.Unlock()
	ot.markDown(ot.clock.Now())
	ot.startProbe()
}

// finishEnd ends p again, before the call that ended it returns, in a
// scheduler that never ran: a backfill, trigger or reconciler process,
// which exits once its call returns and has no probe to end p later. p
// writes a slot's outcome, and a settler's is the only report of a dead
// run (run.abandoned, or slot.missed with may_have_started), made once the
// stores took it; left on a minority, its entry makes a later settler
// close the claim as already recorded, and the run is reported nowhere. It
// is retried every probeEvery until the stores take it, the lease was lost
// (another took the claim over: it reports), or ShutdownGrace has passed.
func (ot *outage) finishEnd(p pendingEnd) {
	until := ot.clock.Now().Add(ot.cfg.ShutdownGrace)
	for ot.clock.Now().Before(until) {
		ot.sleep(probeEvery, nil)
		err := ot.ends.tryEnd(&p)
		switch {
		case err == nil:
			return
		case errors.Is(err, locking.ErrLockLost):
			ot.log.Debug("lease was no longer held when ended again", "event", evLockReleaseFailed,
				"job", p.job, "slot", p.slot, "key", p.lease.Grant().Key.Name, "error", err.Error())
			return
		}
	}
	ot.log.Warn("could not end lease within the shutdown grace; the slot's outcome may stand on too few stores, "+
		"and a settler's report of a dead run is not made", "event", evLockReleaseFailed,
		"job", p.job, "slot", p.slot, "key", p.lease.Grant().Key.Name, "grace", ot.cfg.ShutdownGrace.String())
}

func (ot *outage) startProbe() {
	ot.mu.Lock()
	defer ot.mu.Unlock()
	if ot.probing || ot.state.Load() != stateRunning {
		// Without Run (a Trigger alone) nothing would ever stop the
		// probe: a lease that could not be ended then expires by itself.
		return
	}
	ot.probing = ot.spawn(ot.probe)
}

// probe pings the stores every probeEvery until a majority answers, the
// outage is seen over by an Acquire, or the scheduler stops.
func (ot *outage) probe() {
	defer func() {
		ot.mu.Lock()
		ot.probing = false
		ot.mu.Unlock()
		if ot.down.Load() && !ot.isStopping() {
			ot.startProbe() // an outage began again while we were leaving
		}
	}()
	for ot.down.Load() {
		if !ot.sleep(probeEvery, ot.stopping) {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		_, err := ot.cfg.Locker.Ping(ctx)
		cancel()
		if err == nil {
			ot.quorumSeen()
		} else if errors.Is(err, locking.ErrClosed) {
			return
		}
	}
}

// quorumSeen is called whenever the stores gave a majority answer. After an
// outage it ends the pending leases and starts the run_once and run_all
// recoveries.
func (ot *outage) quorumSeen() {
	if !ot.down.Load() || !ot.down.CompareAndSwap(true, false) {
		return
	}
	ot.mu.Lock()
	pending := ot.pending
	ot.pending = map[string][]pendingEnd{}
	since := ot.since
	ot.since = time.Time{}
	ot.mu.Unlock()
	if !since.IsZero() && ot.cfg.Beat > 0 {
		now := ot.clock.Now()
		ot.spawn(func() { ot.fleet.publishOutage(since, now) })
	}
	for _, ps := range pending {
		ot.spawn(func() {
			for _, p := range ps {
				ot.ends.endLeaseThen(p)
			}
		})
	}
	for _, j := range ot.jobList() {
		j.mu.Lock()
		t, first := j.missed, j.missedFirst
		j.missed, j.missedFirst = time.Time{}, time.Time{}
		j.mu.Unlock()
		if !t.IsZero() && !ot.isStopping() {
			ot.spawn(func() { ot.recoverer.recoverOutage(j, first, t) })
		}
	}
}

// flushPending ends, now, the leases of job whose ending failed during an
// outage, so that its own job lease does not block the slot being tried.
func (ot *outage) flushPending(job string) {
	ot.mu.Lock()
	ps := ot.pending[job]
	delete(ot.pending, job)
	ot.mu.Unlock()
	for _, p := range ps {
		ot.ends.endLeaseThen(p)
	}
}

// noteOutage records that slot t of j was skipped for lack of a quorum.
func (ot *outage) noteOutage(j *job, t time.Time) {
	if j.spec.Misfire.Policy.recovers() {
		j.mu.Lock()
		if t.After(j.missed) {
			j.missed = t
		}
		if j.missedFirst.IsZero() || t.Before(j.missedFirst) {
			j.missedFirst = t
		}
		j.mu.Unlock()
	}
	ot.markDown(t)
	ot.startProbe()
}

// isDown reports whether the stores were last seen without a majority.
func (ot *outage) isDown() bool { return ot.down.Load() }
