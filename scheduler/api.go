package scheduler

import (
	"context"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"
)

// The operator's calls on the scheduler; the control component
// (control.go) carries them out.

// Trigger runs the named job once now, in this process, as a manual slot
// (slot "manual" in the logs and SLOTLOCK_SLOT): it takes the job lease of
// a scheduled run unless the job allows overlap (forbid, replace) — and
// fails, logging slot.skipped reason overlap, when another run of the job
// holds it (a manual run replaces nothing; under replace it is itself
// replaced by a slot later than its start) — and otherwise a lease of its
// own, so the run gets a fencing token above every
// earlier run of the job. It applies the job's timeout and retries, and
// returns nil iff the run succeeded (an error wrapping ErrRunFailed when it
// failed or was canceled). Ending ctx cancels the run (run.canceled reason
// shutdown). Trigger works with or without Run, also disabled jobs.
func (s *Scheduler) Trigger(ctx context.Context, name string) error {
	_, err := s.TriggerRun(ctx, name)
	return err
}

// TriggerRun is Trigger, and returns the manual run's history entry (its
// outcome, replica, run id, token, attempts, duration; Slot "manual") when
// it ran, for the control audit (RecordControl).
func (s *Scheduler) TriggerRun(ctx context.Context, name string) (*history.Entry, error) {
	return s.control.trigger(ctx, name)
}

// PlanBackfill lists the named job's slots in [from, to], oldest first,
// and whether a backfill runs each, from the slot history and the open
// claims. It refuses (ErrBackfillWindow) a window that is empty, holds
// more than MaxBackfillSlots slots, or reaches slots still the replicas'
// own (younger than their lateness bound, misfire deadline and jitter allow);
// and ErrNoHistory when no history is kept.
func (s *Scheduler) PlanBackfill(ctx context.Context, name string, from, to time.Time) ([]BackfillSlot, error) {
	return s.control.planBackfill(ctx, name, from, to)
}

// RunSlot runs slot t of the named job now, in this process, as a backfill
// of a past slot: it claims the slot's key exactly as a replica firing the
// slot does (and, under overlap forbid, takes the job lease, waiting for a
// run going on up to half a lock ttl), reads the slot history, and runs the
// job as a normal run of slot t (SLOTLOCK_SLOT is t; run.started and the
// other run lines carry backfill=true), with the job's timeout and
// retries; the slot then gets its done marker and history entry. It
// returns the run's history entry and nil iff the run succeeded (an error
// wrapping ErrRunFailed when it failed or was canceled). A slot that was
// handled is not run: *HandledError (errors.Is ErrSlotHandled). A slot
// still the replicas' own is refused (ErrBackfillWindow, as PlanBackfill); a claim or
// job lease that cannot be had is an error (locking.ErrNoQuorum,
// locking.ErrNotAcquired: the job lease is held, locking.ErrPaused).
// Ending ctx cancels the run (run.canceled reason shutdown). RunSlot works
// with or without Run, also for disabled jobs.
func (s *Scheduler) RunSlot(ctx context.Context, name string, t time.Time) (history.Entry, error) {
	return s.control.runSlot(ctx, name, t)
}

// Reload replaces the job definitions with specs, whose hash (for the
// heartbeat, `slotlock status` and the reconciler) is hash, or, when hash
// is empty, one computed from specs (specsHash). It checks them
// as New does — on error nothing changes — and waits until Run's loop has
// put them in force (if Run has not started yet, until it has), ctx ends
// or the scheduler stops (ErrStopped). The other settings cannot change.
// See the top of timer_reload.go for what happens to each job.
func (s *Scheduler) Reload(ctx context.Context, hash string, specs []JobSpec) (ReloadResult, error) {
	return s.timer.reload(ctx, hash, specs)
}
