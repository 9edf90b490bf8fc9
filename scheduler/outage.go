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
type outage struct {
	down    atomic.Bool
	mu      sync.Mutex
	probing bool
	pending map[string][]pendingEnd // by job
	since   time.Time               // the earliest work the outage hit (published when it ends)
}

// markDown records that the stores had no majority for work due at at.
func (s *Scheduler) markDown(at time.Time) {
	s.outage.mu.Lock()
	if s.outage.since.IsZero() || at.Before(s.outage.since) {
		s.outage.since = at
	}
	s.outage.mu.Unlock()
	s.outage.down.Store(true)
}

func (s *Scheduler) retryEnd(p pendingEnd) {
	s.outage.mu.Lock()
	if s.outage.pending == nil {
		s.outage.pending = map[string][]pendingEnd{}
	}
	s.outage.pending[p.job] = append(s.outage.pending[p.job], p)
	s.outage.mu.Unlock()
	s.markDown(s.clock.Now())
	s.startProbe()
}

func (s *Scheduler) startProbe() {
	s.outage.mu.Lock()
	defer s.outage.mu.Unlock()
	if s.outage.probing || s.state.Load() != stateRunning {
		// Without Run (a Trigger alone) nothing would ever stop the
		// probe: a lease that could not be ended then expires by itself.
		return
	}
	s.outage.probing = s.spawn(s.probe)
}

// probe pings the stores every probeEvery until a majority answers, the
// outage is seen over by an Acquire, or the scheduler stops.
func (s *Scheduler) probe() {
	defer func() {
		s.outage.mu.Lock()
		s.outage.probing = false
		s.outage.mu.Unlock()
		if s.outage.down.Load() && !s.isStopping() {
			s.startProbe() // an outage began again while we were leaving
		}
	}()
	for s.outage.down.Load() {
		if !s.sleep(probeEvery, s.stopping) {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		_, err := s.cfg.Locker.Ping(ctx)
		cancel()
		if err == nil {
			s.quorumSeen()
		} else if errors.Is(err, locking.ErrClosed) {
			return
		}
	}
}

// quorumSeen is called whenever the stores gave a majority answer. After an
// outage it ends the pending leases and starts the run_once and run_all
// recoveries.
func (s *Scheduler) quorumSeen() {
	if !s.outage.down.Load() || !s.outage.down.CompareAndSwap(true, false) {
		return
	}
	s.outage.mu.Lock()
	pending := s.outage.pending
	s.outage.pending = nil
	since := s.outage.since
	s.outage.since = time.Time{}
	s.outage.mu.Unlock()
	if !since.IsZero() && s.cfg.Beat > 0 {
		now := s.clock.Now()
		s.spawn(func() { s.fleet.publishOutage(since, now) })
	}
	for _, ps := range pending {
		s.spawn(func() {
			for _, p := range ps {
				s.outcomes.endLeaseThen(p)
			}
		})
	}
	for _, j := range s.jobList() {
		j.mu.Lock()
		t, first := j.missed, j.missedFirst
		j.missed, j.missedFirst = time.Time{}, time.Time{}
		j.mu.Unlock()
		if !t.IsZero() && !s.isStopping() {
			s.spawn(func() { s.recoverOutage(j, first, t) })
		}
	}
}

// flushPending ends, now, the leases of job whose ending failed during an
// outage, so that its own job lease does not block the slot being tried.
func (s *Scheduler) flushPending(job string) {
	s.outage.mu.Lock()
	ps := s.outage.pending[job]
	delete(s.outage.pending, job)
	s.outage.mu.Unlock()
	for _, p := range ps {
		s.outcomes.endLeaseThen(p)
	}
}

// recoverOutage recovers, when the stores answer again, the slots of j
// that this replica skipped with no_quorum, first to last: run_once the
// latest, run_all the range (without logging its older slots as late
// again: each was logged with no_quorum).
func (s *Scheduler) recoverOutage(j *job, first, last time.Time) {
	if j.spec.Misfire.Policy == MisfireRunOnce {
		// Replicas whose clocks differ end an outage with different latest
		// missed slots (a slow clock has not fired the outage's last slot
		// yet): each raises the job's record of the latest one, and
		// recover runs a run_once slot only if none later was missed.
		s.noteMissed(j, last)
	}
	if j.spec.Misfire.Policy == MisfireRunAll && !first.IsZero() {
		if picked, _ := s.pickMissed(j, countSlots(j.spec.Schedule, first.Add(-time.Second), last)); len(picked) > 0 {
			s.recoverAll(j, picked)
			return
		}
	}
	s.recover(j, last)
}

// noteMissed raises job j's record of the latest slot missed in an outage
// to t.
func (s *Scheduler) noteMissed(j *job, t time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	_ = s.cfg.Locker.AdvanceRecord(ctx, missedKey(j.name()), t.Unix())
}
