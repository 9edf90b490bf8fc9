package smallworld

import (
	"context"
	"errors"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// The pause register (slotlock pause / resume): a process that pauses the
// job's family and resumes it, and what the others do with a claim the
// pause refused (guards.go's claim verdict: a paused slot, or, for a
// pause written after the slot was due while another claim holds it, the
// other claim's refusal), a claim won with a pause that covers the slot
// (a recovery: still paused), and the reconciler's reading of the
// register (a covered slot nobody ran is skipped paused, not missed).

// clockOffset: the register's versions are its writers' clock in
// milliseconds, which Pause.Covers compares with a slot's due time, so a
// pauser's clock runs on the slots' scale (slotTime): a pause written at
// tick 0 covers slot 0, one written later does not.
func (w *world) clockOffset(name string) time.Duration {
	if len(name) > 0 && name[0] == 'U' {
		return -time.Since(time.Unix(0, 0))
	}
	return 0
}

// pauser pauses the job, then resumes it, each as one SetPause.
func pauser(a *actor) {
	ctx := context.Background()
	if !a.first("pause", 0, forever) {
		return
	}
	if _, err := a.locker.SetPause(ctx, family, locking.Pause{Paused: true, By: a.name}); err != nil || !a.step("resume") {
		return
	}
	_, _ = a.locker.SetPause(ctx, family, locking.Pause{By: a.name})
}

// refused is a fired slot's claim refused: a paused slot (pausedSlot),
// unless the pause began after the slot was due and another claim holds
// the key: then that claim's refusal.
func (a *actor) refused(slot int, err error) {
	var pe *locking.PausedError
	if !errors.As(err, &pe) {
		a.w.report(a, "skipped", slot, skipReason(err))
		return
	}
	if pe.Refusal != nil && !pe.Pause.Covers(slotTime(slot)) {
		a.w.report(a, "skipped", slot, skipReason(pe.Refusal))
		return
	}
	a.pausedSlot(slot)
}

// pausedSlot is end.go's: slot.skipped paused and the paused entry, the
// same whoever writes it (no fence, no IfAbsent).
func (a *actor) pausedSlot(slot int) {
	a.w.report(a, "skipped", slot, "paused")
	if !a.step("paused-entry") {
		return
	}
	_ = a.locker.AppendLog(context.Background(), family, locking.LogAppend{Entry: entry(slot, outSkippedPaused, "", ""), Keep: a.w.keep()})
}

// readPause is the reconciler's ReadPause, in worlds with a pauser (in the
// others the register is never written: not paused, and the read would
// only add requests to every schedule).
func (a *actor) readPause() (locking.Pause, error) {
	if len(a.w.cfg.pausers) == 0 {
		return locking.Pause{}, nil
	}
	return a.locker.ReadPause(context.Background(), family)
}
