package smallworld

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/slotlock/slotlock/locking"
)

// The programs of the world's processes: what the scheduler does with the
// stores' answers, step by step, through the locking API only (Claim,
// Lease.End, Release, ReadLog, ReadClaims, AppendLog). They follow
// scheduler/slot.go (attemptSlot: a slot fired on time, overlap allow),
// scheduler/abandoned.go (settleAbandoned, settleOrphan) and
// scheduler/reconcile.go (pass.job); where the scheduler changes what it
// does with an answer, this file changes with it.
//
// Outcomes, as history entries "<slot>|<outcome>|<run id>".
const (
	outSucceeded = "succeeded"
	outAbandoned = "abandoned"
	outMissed    = "missed"
	// outMayHaveStarted: a claim won on a majority whose holder was lost
	// before confirming that its body started (issue #21's model): neither
	// run again nor reported abandoned.
	outMayHaveStarted = "may_have_started"
)

func entry(slot int, outcome, runID string) locking.LogEntry {
	return locking.LogEntry{Score: int64(slot + 1), Value: fmt.Sprintf("%d|%s|%s", slot, outcome, runID)}
}

// replica fires each slot of the world on time: slot i at tick i.
func replica(a *actor) {
	for slot := range a.w.cfg.slots {
		a.fire(slot)
		if a.isDead() {
			return
		}
	}
}

// fire is attemptSlot: claim the slot; settle a claim taken over; hand a
// leftover back; else run the body and end the claim with its outcome,
// then settle the abandoned claim the stores pointed to, if any.
func (a *actor) fire(slot int) {
	if !a.gate("fire", slot, slot) {
		return
	}
	lease, err := a.claim(slot)
	switch {
	case err != nil:
		a.w.report(a, "skipped", slot, skipReason(err))
		return
	case lease.Abandoned() != nil:
		a.settleAbandoned(slot, lease)
		return
	case lease.Leftover():
		if a.step("release") {
			a.end(lease, locking.Ending{})
			a.w.report(a, "skipped", slot, "claimed")
		}
		return
	}
	if !a.step("run") {
		return
	}
	a.w.started(a, slot, lease)
	if !a.step("end") {
		return
	}
	e := entry(slot, outSucceeded, lease.ID())
	if a.endRetried(lease, locking.Ending{DoneTTL: doneTTL, Note: outSucceeded, Entry: &e, Keep: keep}) {
		a.w.report(a, "succeeded", slot, lease.ID())
	}
	if o := lease.Orphan(); o != nil {
		a.settleOrphan(slotOf(o.Key))
	}
}

// endRetried ends lease and, when the stores did not settle it (not lost:
// unanswered), tries once more, as the scheduler's retryEnd does when the
// stores answer again. It reports whether the end was accepted.
func (a *actor) endRetried(lease *locking.Lease, e locking.Ending) bool {
	res := a.end(lease, e)
	if res.Err == nil {
		return true
	}
	if errors.Is(res.Err, locking.ErrLockLost) || !a.step("retry-end") {
		return false
	}
	return a.end(lease, e).Err == nil
}

// settler is a process pointed at the abandoned claim of slot 0 (by
// Lease.Orphan, or a recovery): it starts once a lease's time has passed.
func settler(a *actor) {
	if a.gate("settle", 1, 1) {
		a.settleOrphan(0)
	}
}

// settleOrphan: claim the slot; a claim taken over is settled; anything
// else (a leftover, or a slot settled meanwhile) is closed with a done
// marker and no history entry, so that no store points to it again.
func (a *actor) settleOrphan(slot int) {
	lease, err := a.claim(slot)
	if err != nil {
		return
	}
	if lease.Abandoned() == nil {
		if a.step("close") {
			a.endRetried(lease, locking.Ending{DoneTTL: doneTTL, Note: outAbandoned})
		}
		return
	}
	a.settleAbandoned(slot, lease)
}

// settleAbandoned closes a claim taken over with the abandoned entry and,
// once the stores accepted it, logs run.abandoned.
func (a *actor) settleAbandoned(slot int, lease *locking.Lease) {
	ab := lease.Abandoned()
	if !a.step("settle-end") {
		return
	}
	e := entry(slot, outAbandoned, ab.ID)
	if a.endRetried(lease, locking.Ending{DoneTTL: doneTTL, Note: outAbandoned, Entry: &e, Keep: keep}) {
		a.w.report(a, "run.abandoned", slot, ab.ID)
	}
}

// reconciler is pass.job for every slot: a slot with no history entry and
// no open claim (read in that order) is missed; one with an open claim
// waits for the next pass.
func reconciler(a *actor) {
	ctx := context.Background()
	for slot := range a.w.cfg.slots {
		if !a.step("reconcile") {
			return
		}
		if got, err := a.readLog(slot); err != nil || len(got) > 0 {
			continue
		}
		claims, err := a.locker.ReadClaims(ctx, family)
		if err != nil {
			continue
		}
		if got, err := a.readLog(slot); err != nil || len(got) > 0 {
			continue
		}
		if slices.Contains(claims, slotKey(slot)) {
			a.w.report(a, "stalled", slot, "")
			continue
		}
		e := entry(slot, outMissed, "")
		if a.locker.AppendLog(ctx, family, locking.LogAppend{Entry: e, Keep: keep}) == nil {
			a.w.report(a, "slot.missed", slot, "")
		}
	}
}

// finalRead notes every slot's history entries and open claims.
func finalRead(a *actor) {
	if !a.step("read") {
		return
	}
	claims, _ := a.locker.ReadClaims(context.Background(), family)
	for slot := range a.w.cfg.slots {
		got, _ := a.readLog(slot)
		a.w.mu.Lock()
		a.w.final[slot] = got
		a.w.open[slot] = slices.Contains(claims, slotKey(slot))
		a.w.mu.Unlock()
	}
}

// readLog returns slot's history entries.
func (a *actor) readLog(slot int) ([]string, error) {
	log, err := a.locker.ReadLog(context.Background(), family, int64(slot+1), keep)
	var out []string
	for _, e := range log {
		if e.Score == int64(slot+1) {
			out = append(out, e.Value)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), err
}

func slotOf(k locking.Key) int {
	n, _ := strings.CutPrefix(k.Name, "slot:")
	return int(n[0] - '0')
}

// skipReason is the scheduler's reason for a refused claim (lostSlot).
func skipReason(err error) string {
	var he *locking.HeldError
	switch {
	case errors.Is(err, locking.ErrSplitVote):
		return "no_quorum"
	case errors.As(err, &he) && he.Done:
		return "done"
	case errors.As(err, &he) && he.Claimed:
		return "claimed"
	case errors.As(err, &he):
		return "held"
	}
	return "no_quorum"
}

func (a *actor) isDead() bool {
	a.w.mu.Lock()
	defer a.w.mu.Unlock()
	return a.dead
}
