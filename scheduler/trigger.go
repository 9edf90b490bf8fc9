package scheduler

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/slotlock/slotlock/locking"
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
	tctx, span := s.traceTrigger(ctx, name)
	defer span.end()
	key := runKey(name)
	if j.spec.Overlap == OverlapAllow {
		key = locking.Key{Family: name, Name: "manual:" + strconv.FormatUint(rand.Uint64(), 16)}
	}
	until := s.clock.Now().Add(time.Second)
	lease, err := s.acquire(name, key, retryPolicy{splitUntil: until, quorumUntil: until, trace: tctx})
	if err != nil {
		if !isSplitVote(err) && errors.Is(err, locking.ErrNotAcquired) {
			span.skip(history.ReasonOverlap)
			s.skipped(name, SlotManual, history.ReasonOverlap, 1, heldAttrs(err)...)
			return nil, fmt.Errorf("scheduler: trigger %s: another run of the job is going on: %w", name, err)
		}
		span.skip(history.ReasonNoQuorum)
		s.skipped(name, SlotManual, history.ReasonNoQuorum, 1, "error", err.Error())
		return nil, fmt.Errorf("scheduler: trigger %s: %w", name, err)
	}
	// The run ends with ctx or with the scheduler's shutdown.
	parent, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := context.AfterFunc(s.runCtx, func() { cancel(context.Cause(s.runCtx)) })
	defer stop()

	h, runErr := s.execute(runSpec{j: j, manual: true, leases: []*locking.Lease{lease}, parent: parent, trace: tctx})
	span.ran(h)
	outcome := h.Outcome
	s.endLease(name, SlotManual, lease, 0, "")
	if outcome != history.OutcomeSucceeded {
		if runErr == nil {
			runErr = context.Cause(parent)
		}
		return &h, fmt.Errorf("%w: %s %s: %v", ErrRunFailed, name, outcome, runErr)
	}
	return &h, nil
}
