package scheduler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"
)

// Backfill (slotlock backfill): the slots of a past window that have no
// outcome in the slot history run, one by one, in the calling process,
// each under its own nominal slot and the normal locks — the slot's claim
// (a slot that started is never started again: its claim is open, its
// done marker stands, or the history records it) and, under forbid, the
// job lease. PlanBackfill says which; RunSlot runs one.
//
// "No outcome" means no entry, or entries whose join (history.Join) says
// nobody ran the slot and no rule chose not to: missed (the reconciler's
// verdict) or skipped with reason late (a misfire the skip policy
// dropped). A slot any of whose entries says its body ran or may have run
// (succeeded, failed, canceled, abandoned, missed may_have_started), that
// was skipped by a rule (overlap, a pause, replace), or whose claim is
// open (a run going on) is never run.

// Errors of a backfill's window; each is a usage error.
var (
	// ErrBackfillWindow is wrapped by every refusal of a window: empty,
	// too large, or reaching slots that still belong to the replicas.
	ErrBackfillWindow = errors.New("scheduler: backfill window refused")
	// ErrSlotHandled is wrapped by RunSlot's error when the slot was not
	// run because it was handled (*HandledError says how).
	ErrSlotHandled = errors.New("scheduler: slot already handled")
)

// MaxBackfillSlots bounds the slots of one backfill window.
const MaxBackfillSlots = history.MaxWindowSlots

// HandledError is RunSlot's error for a slot it did not run because the
// slot was handled: Reason is "running" (its claim is open: a run going
// on, or one abandoned and not yet settled), "done" (its done marker
// stands), "abandoned" (RunSlot found the claim of a run that never ended
// and settled it: run.abandoned), "paused" (due during a pause, now or
// past: the pause register's), or the outcome the history records.
type HandledError struct {
	Slot   time.Time
	Reason string
	Entry  *history.Entry // the history's entry, when it gave the reason
}

func (e *HandledError) Error() string {
	return fmt.Sprintf("scheduler: slot %s already handled: %s", slotString(e.Slot), e.Reason)
}

func (e *HandledError) Unwrap() error { return ErrSlotHandled }

// backfillable reports whether a slot whose outcome (the join of its
// history entries) is e (nil: none) may be run by a backfill: no entry,
// or evidence that it plainly did not run (history.Entry.Backfillable).
func backfillable(e *history.Entry) bool {
	return e == nil || e.Backfillable()
}

// BackfillSlot is one slot of a backfill window and what a backfill does
// with it.
type BackfillSlot struct {
	Slot time.Time
	Run  bool
	// Why: for a slot to run, "no outcome" or its entry's outcome (missed,
	// skipped) and reason; for one skipped, its entry's outcome and
	// reason, "running" (open claim), "beyond history" (older than the
	// history reaches: it cannot tell whether the slot ran) or "paused"
	// (due during a pause, now or past, that no entry records yet).
	Why string
	// Entry is the slot's outcome in the history, the join of its
	// entries: for a refused slot, the entry that decided it
	// (history.Entry.Source names who wrote it).
	Entry *history.Entry
}

// checkWindow refuses a backfill window that is empty or reaches slots
// younger than the replicas' own (reconcileAfter).
func (c *control) checkWindow(j *job, from, to time.Time) error {
	if to.Before(from) {
		return fmt.Errorf("%w: it ends (%s) before it starts (%s)", ErrBackfillWindow, slotString(to), slotString(from))
	}
	latest := c.clock.Now().Add(-c.window.after(j))
	if to.After(latest) {
		return fmt.Errorf("%w: it ends at %s, but slots of %s after %s (%s ago) still belong to the replicas (firing, retries, misfire recovery)",
			ErrBackfillWindow, slotString(to), j.name(), slotString(latest), c.window.after(j))
	}
	return nil
}

// describeEntry names a history entry's outcome and reason: "succeeded",
// "skipped (overlap)".
func describeEntry(e history.Entry) string {
	if e.MayHaveStarted {
		return string(e.Outcome) + " (" + string(e.Reason) + ", may have started)"
	}
	if e.Reason != "" {
		return string(e.Outcome) + " (" + string(e.Reason) + ")"
	}
	return string(e.Outcome)
}

// planBackfill is Scheduler.PlanBackfill.
func (c *control) planBackfill(ctx context.Context, name string, from, to time.Time) ([]BackfillSlot, error) {
	j, ok := c.job(name)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownJob, name)
	}
	if c.cfg.HistoryKeep <= 0 {
		return nil, ErrNoHistory
	}
	if err := c.checkWindow(j, from, to); err != nil {
		return nil, err
	}
	slots := history.SlotsBetween(j.spec.Schedule, from.Add(-time.Nanosecond), to, MaxBackfillSlots+1)
	if len(slots) > MaxBackfillSlots {
		return nil, fmt.Errorf("%w: more than %d slots of %s in [%s, %s]; backfill a shorter window at a time",
			ErrBackfillWindow, MaxBackfillSlots, name, slotString(from), slotString(to))
	}
	if len(slots) == 0 {
		return nil, nil
	}
	// Every entry from the window's first slot on (the ones after the
	// window come first); the stores keep HistoryKeep each, and the union
	// of a majority may hold a few more.
	keep := c.cfg.HistoryKeep
	log, err := c.cfg.Locker.ReadLog(ctx, name, slots[0].Unix(), historyReadLimit(keep))
	if err != nil {
		return nil, err
	}
	// A slot with history.keep entries as new or newer may have had its
	// own trimmed: it cannot be told (historyReach).
	reach := historyReach(log, keep)
	claims, err := c.cfg.Locker.ReadClaims(ctx, name)
	if err != nil {
		return nil, err
	}
	open := history.ClaimedSlots(claims)
	pause, err := c.cfg.Locker.ReadPause(ctx, name)
	if err != nil {
		return nil, err
	}
	out := make([]BackfillSlot, len(slots))
	for i, t := range slots {
		b := BackfillSlot{Slot: t}
		e, found, err := entryOf(name, log, t.Unix())
		if err != nil {
			return nil, err
		}
		if found {
			b.Entry = &e
		}
		switch {
		case found && !backfillable(&e):
			b.Why = describeEntry(e)
		case open[t.Unix()]:
			b.Why = "running"
		case t.Unix() < reach:
			b.Why = "beyond history"
		case pause.PausedAt(j.spec.Due(t)):
			b.Why = string(history.ReasonPaused) // the operator paused it: no entry says so yet
		case found:
			b.Run, b.Why = true, describeEntry(e)
		default:
			b.Run, b.Why = true, "no outcome"
		}
		out[i] = b
	}
	return out, nil
}

// runSlot is Scheduler.RunSlot.
func (c *control) runSlot(ctx context.Context, name string, t time.Time) (history.Entry, error) {
	j, ok := c.job(name)
	if !ok {
		return history.Entry{}, fmt.Errorf("%w: %q", ErrUnknownJob, name)
	}
	if c.cfg.HistoryKeep <= 0 {
		return history.Entry{}, ErrNoHistory
	}
	if !t.Equal(j.spec.Schedule.Next(t.Add(-time.Second))) {
		return history.Entry{}, fmt.Errorf("%w: %s is not a slot of %s (%s)", ErrBackfillWindow, t.UTC().Format(time.RFC3339Nano),
			name, j.spec.Spec)
	}
	if err := c.checkWindow(j, t, t); err != nil {
		return history.Entry{}, err
	}
	if c.isStopping() || !c.enter() {
		return history.Entry{}, ErrStopped
	}
	defer c.leave()
	if err := ctx.Err(); err != nil {
		return history.Entry{}, err
	}
	h, err := c.attempts.attemptSlot(j, t, originBackfill, ctx)
	if h == nil {
		return history.Entry{}, err
	}
	return *h, err
}
