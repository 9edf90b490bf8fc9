package scheduler

import (
	"context"
	"fmt"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"
)

// control is the component that carries out the operator's calls (the
// manual trigger, backfill) and the pauses (pause_on_failure, and what a
// replica notes of an operator's pause). It keeps no state of its own
// beyond each job's paused flag: a pause lives in the lock stores, and
// a run goes through the attempt.
type control struct {
	*engine
	attempts slotAttempter
	window   ownedWindow
}

// slotAttempter runs one slot's attempt pipeline, its outcome returned
// (attempt.go).
type slotAttempter interface {
	attemptSlot(j *job, t time.Time, o origin, caller context.Context) (*history.Entry, error)
}

// ownedWindow says how old a slot of j must be before it is no longer the
// replicas' own to fire, retry or recover (the reconciler's window).
type ownedWindow interface {
	after(j *job) time.Duration
}

func newControl(e *engine, attempts slotAttempter, window ownedWindow) *control {
	return &control{engine: e, attempts: attempts, window: window}
}

// trigger runs the named job once now as a manual slot (Scheduler.Trigger).
func (c *control) trigger(ctx context.Context, name string) (*history.Entry, error) {
	j, ok := c.job(name)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownJob, name)
	}
	if c.isStopping() || !c.enter() {
		return nil, ErrStopped
	}
	defer c.leave()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return c.attempts.attemptSlot(j, time.Time{}, originManual, ctx)
}
