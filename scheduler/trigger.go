package scheduler

import (
	"context"
	"fmt"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"
)

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
	j, ok := s.job(name)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownJob, name)
	}
	if s.isStopping() || !s.enter() {
		return nil, ErrStopped
	}
	defer s.leave()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.attemptSlot(j, time.Time{}, originManual, ctx)
}
