package scheduler

import (
	"time"

	"github.com/slotlock/slotlock/scheduler/history"
)

// What the tests read of the engine, here and in package scheduler_test
// (the simulation): accessors that no caller of the library needs.

// JitterOffset is jitterOffset: the offset of slot t of job.
func JitterOffset(job string, slot time.Time, jitter time.Duration) time.Duration {
	return jitterOffset(job, slot, jitter)
}

// ShortestInterval is shortestInterval: the jitter's bound.
func ShortestInterval(sched Schedule, from time.Time) time.Duration {
	return shortestInterval(sched, from)
}

// Backfillable is backfillable: whether a backfill may run a slot whose
// entry is e.
func Backfillable(e *history.Entry) bool { return backfillable(e) }

// DoneTTL is how long a slot's done marker lives:
// max(LockTTL, 2*MaxClockSkew + Lateness + 2s); a run_once job's markers
// live past its misfire deadline (run_all's too), and a job's jitter is added
// to its own.
func (s *Scheduler) DoneTTL() time.Duration { return s.doneTTL }

// Lateness is the bound after which a firing counts as late.
func (s *Scheduler) Lateness() time.Duration { return s.lateness }

// ReplaceWait is replaceWait.
func (s *Scheduler) ReplaceWait() time.Duration { return s.attempts.replaceWait() }

// BackfillAfter is how old a slot of the named job must be before a
// backfill may run it: younger ones are still being fired, retried or
// recovered by the replicas (the lateness bound, the misfire deadline, the
// jitter), and judged by the reconciler at that age. 0 for an unknown job.
func (s *Scheduler) BackfillAfter(job string) time.Duration {
	j, _ := s.job(job)
	if j == nil {
		return 0
	}
	return s.reconciler.after(j)
}

// SetViewSource makes s read its view of the fleet from f instead of the
// heartbeats (the simulation's disagreeing views). Call it before Run.
func SetViewSource(s *Scheduler, f func() []string) { s.fleet.viewSource = f }

// SlotRank is this replica's rank among its view for slot t of job
// (-1: no view yet), and whether it is a fallback for it.
func (s *Scheduler) SlotRank(job string, t time.Time) (int, bool) {
	_, role := s.fleet.slotDelay(job, t)
	return s.fleet.slotRank(job, t), role == roleFallback
}

// SetDraw makes s draw its random numbers (draw.go) from f: f(what) for
// what. Call it before Run.
func SetDraw(s *Scheduler, f func(what string) uint64) { s.draw = f }

// ReconcilePass runs one reconciler pass now, as a replica started at
// started does every ReconcileEvery (the simulation's reconciler
// processes).
func (s *Scheduler) ReconcilePass(started time.Time) { s.reconciler.pass(started) }
