package smallworld

import (
	"context"
	"errors"
	"slices"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// The actors that write a slot's outcome besides the replicas firing it
// and the settlers: a backfill (scheduler/backfill.go: PlanBackfill, then
// RunSlot's attemptSlot with origin backfill), the start-up probe
// (startup.go, probeLate) and the reconciler's pass (model_test.go), each
// of them a process of the explored world that may be killed at any
// step. They work on slot 0: the slot every replica was down for.

// backfill is `slotlock backfill` of slot 0: the n-th backfill of a world
// (from 0) starts once the done markers expired n times (and
// cfg.backfillAge more), so that a second backfill comes after the first
// one's markers are gone. It plans the slot from the history and the
// open claims (the join of its entries must be backfillable, its claim
// not open), claims it, settles a claim taken over or hands back a
// leftover (the backfill then refuses the slot), asks the history again
// under its claim (attempt.recorded: every backfill does), and runs the
// body.
func backfill(n int) func(*actor) {
	return func(a *actor) {
		const slot = 0
		if !a.startBackfill(n) || !a.planBackfill(slot) || !a.step("claim") {
			return
		}
		lease, err := a.claim(slot)
		switch {
		case err != nil:
			a.w.report(a, "refused", slot, skipReason(err))
			return
		case lease.Grant().Abandoned != nil:
			a.w.report(a, "refused", slot, "abandoned")
			a.settleAbandoned(slot, lease)
			return
		case lease.Grant().Leftover:
			if a.step("release") {
				a.end(lease, locking.Ending{})
				a.w.report(a, "refused", slot, "claimed")
			}
			return
		}
		if !a.step("recorded") {
			return
		}
		log, err := a.readFrom(slot)
		e, found := joinOf(valuesOf(log, slot))
		switch {
		case err != nil, !found && len(log) >= a.w.keep():
			// slotRecorded's errHistoryShort: the log is full back to the
			// slot and may have dropped its entry: not run.
			if a.step("release") {
				a.end(lease, locking.Ending{})
			}
			return
		case !backfillable(e, found):
			a.closeRecorded(slot, lease, e)
			return
		case !found:
			if !a.missedBeforeBackfill(slot, lease) {
				return
			}
		}
		a.runBody(slot, lease)
	}
}

// closeRecorded is a backfill's actDone on a slot the history records:
// closed with a done marker, no entry of its own.
func (a *actor) closeRecorded(slot int, lease *locking.Lease, e history.Entry) {
	if a.step("close") {
		a.endRetried(lease, locking.Ending{DoneTTL: doneTTL, Note: "done"})
		a.w.report(a, "refused", slot, "recorded "+kindOf(e.LogEntry(slotTime(slot)).Value))
	}
}

// missedBeforeBackfill is the backfill's verdict on a slot with no entry
// (scheduler/backfill_missed.go): the missed entry, only where the slot
// has none (IfAbsent), and slot.missed when its write added it, before
// the run; where another's entry is there, the history is read again
// and decides. It reports whether the backfill runs the slot.
func (a *actor) missedBeforeBackfill(slot int, lease *locking.Lease) bool {
	if !a.step("judge") {
		return false
	}
	err := a.locker.AppendLog(context.Background(), family, locking.LogAppend{Entry: entry(slot, outMissed, "", ""), Keep: a.w.keep(), IfAbsent: true})
	switch {
	case err == nil:
		a.w.report(a, "slot."+outMissed, slot, "")
		return true
	case !errors.Is(err, locking.ErrLogHasEntry):
		if a.step("release") {
			a.end(lease, locking.Ending{})
		}
		return false
	}
	if !a.step("recorded-again") {
		return false
	}
	log, err := a.readFrom(slot)
	e, found := joinOf(valuesOf(log, slot))
	switch {
	case err != nil:
		if a.step("release") {
			a.end(lease, locking.Ending{})
		}
		return false
	case found && !backfillable(e, found):
		a.closeRecorded(slot, lease, e)
		return false
	}
	return true
}

// startBackfill waits for the backfill's start: at its tick (cfg.at) and
// once the done markers expired n times more than before the first
// backfill (cfg.backfillAge).
func (a *actor) startBackfill(n int) bool {
	return a.gateAt("backfill", a.w.cfg.at[a.name], a.w.cfg.backfillAge+n)
}

// planBackfill is PlanBackfill for one slot: the join of its entries
// (history.Entry.Backfillable) and its open claim decide.
func (a *actor) planBackfill(slot int) bool {
	ctx := context.Background()
	log, err := a.readFrom(slot)
	if err != nil {
		return false
	}
	e, found := joinOf(valuesOf(log, slot))
	switch {
	case !backfillable(e, found):
		a.w.report(a, "refused", slot, "planned "+kindOf(e.LogEntry(slotTime(slot)).Value))
		return false
	case int64(slot+1) < historyReach(log, a.w.keep()):
		a.w.report(a, "refused", slot, "beyond history")
		return false
	}
	if !a.step("plan-claims") {
		return false
	}
	claims, err := a.locker.ReadClaims(ctx, family)
	if err != nil {
		return false
	}
	if slices.Contains(claims, slotKey(slot)) {
		a.w.report(a, "refused", slot, "running")
		return false
	}
	return true
}

// probe is the start-up probe (probeLate) of slot 0, under misfire skip:
// it claims the slot; settles a claim taken over, hands back a leftover;
// asks the history when the done markers may have expired (a slot won
// later than markerSafe); and closes the slot with its done marker and
// the entry skipped/late.
func probe(a *actor) {
	const slot = 0
	if !a.first("probe", 0, forever) {
		return
	}
	lease, err := a.claim(slot)
	switch {
	case err != nil:
		return
	case lease.Grant().Abandoned != nil:
		a.settleAbandoned(slot, lease)
		return
	case lease.Grant().Leftover:
		if a.step("release") {
			a.end(lease, locking.Ending{})
		}
		return
	}
	if a.agedOnce() {
		if !a.step("recorded") {
			return
		}
		got, err := a.readLog(slot)
		if _, found := joinOf(got); err != nil || found {
			if a.step("close") {
				a.endRetried(lease, locking.Ending{DoneTTL: doneTTL, Note: "done"})
			}
			return
		}
	}
	if !a.step("end") {
		return
	}
	e := entry(slot, outSkippedLate, "", a.name)
	if a.endRetried(lease, locking.Ending{DoneTTL: doneTTL, Note: "late", Entry: &e, Keep: a.w.keep()}) {
		a.w.report(a, "skipped", slot, "late")
	}
	if o := lease.Grant().Orphan; o != nil {
		a.settleOrphan(slotOf(o.Key))
	}
}

// agedOnce: the done markers expired at least once (the slot is older
// than markerSafe).
func (a *actor) agedOnce() bool {
	a.w.mu.Lock()
	defer a.w.mu.Unlock()
	return a.w.aged > 0
}
