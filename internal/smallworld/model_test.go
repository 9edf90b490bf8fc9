package smallworld

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// The programs of the world's processes: what the scheduler does with the
// stores' answers, step by step, through the locking API only (Claim,
// Lease.Start, Lease.Extend, Lease.End, Acquire, ReadLog, ReadClaims,
// AppendLog). They follow scheduler/attempt.go and guards.go (the steps of
// a slot fired on time, overlap allow), run.go (Start as the body
// begins), end.go (the exit), settlement.go (settleOrphan,
// settleAbandoned, settleUnconfirmed) and reconciler.go (reconciler.pass,
// pass.job, write);
// where the scheduler changes what it does with an answer, this file
// changes with it.
//
// The entries they write are the scheduler's (entries_test.go), and
// every reading of a slot's outcome goes through the product's rules
// (product_test.go).

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
	if !a.settleClaim(slot, lease, err) {
		return
	}
	if lease.Grant().Pause.Covers(slotTime(slot)) {
		// attempt.paused: won after the pause ended, still paused.
		if a.step("release") {
			a.end(lease, locking.Ending{})
			a.pausedSlot(slot)
		}
		return
	}
	a.runBody(slot, lease)
}

// settleClaim is what attemptSlot does with its claim's answer before any
// guard: a claim refused is reported, one taken over from an abandoned
// claim is settled, a leftover is handed back. It reports whether the
// slot goes on with lease, a claim won fresh.
func (a *actor) settleClaim(slot int, lease *locking.Lease, err error) (goOn bool) {
	switch {
	case err != nil:
		a.refused(slot, err)
		return false
	case lease.Grant().Abandoned != nil:
		a.settleAbandoned(slot, lease)
		return false
	case lease.Grant().Leftover:
		if a.step("release") {
			a.end(lease, locking.Ending{})
			a.w.report(a, "skipped", slot, "claimed")
		}
		return false
	}
	return true
}

// runBody is run.go's: the body begins (Start), the watchdog's first
// renewal confirms the start, the run ends with its outcome; then the
// abandoned claim the stores pointed to, if any, is settled.
func (a *actor) runBody(slot int, lease *locking.Lease) { a.runBodyWith(slot, lease, nil) }

// runBodyWith is runBody with the job lease the run holds (nil: none),
// released in the same call as the claim ends.
func (a *actor) runBodyWith(slot int, lease, jobLease *locking.Lease) {
	if !a.step("run") {
		return
	}
	// The body begins: run.go calls Start, and the watchdog's first renewal
	// (within a second) confirms the start on the stores.
	lease.Start()
	a.w.started(a, slot, lease)
	if !a.step("confirm") {
		return
	}
	_ = lease.Extend(context.Background()) // lost or unanswered: the run goes on to its end
	if !a.step("end") {
		return
	}
	a.w.mu.Lock()
	a.w.bodyEnded(a)
	a.w.mu.Unlock()
	e := entry(slot, outSucceeded, lease.Grant().ID, a.name)
	if a.endRetried(lease, locking.Ending{DoneTTL: doneTTL, Note: outSucceeded, Entry: &e, Keep: a.w.keep(), Also: jobLease}) {
		a.w.report(a, "succeeded", slot, lease.Grant().ID)
	}
	if o := lease.Grant().Orphan; o != nil {
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
	e.Also = nil // tryEnd: a retry ends the slot's lease alone
	return a.end(lease, e).Err == nil
}

// settler is a process pointed at the abandoned claim of slot 0 (by
// Grant.Orphan, or a recovery): it starts once a lease's time has passed.
func settler(a *actor) {
	if a.first("settle", 1, 1) {
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
	if lease.Grant().Abandoned == nil {
		if a.step("close") {
			a.endRetried(lease, locking.Ending{DoneTTL: doneTTL, Note: outAbandoned})
		}
		return
	}
	a.settleAbandoned(slot, lease)
}

// settleAbandoned closes a claim taken over: with the abandoned entry and
// run.abandoned where the stores hold the confirmation of its start
// (Abandoned.Started), else as settleUnconfirmed does — the missed entry
// with reason unknown and may_have_started, and slot.missed — once the
// stores accepted it.
func (a *actor) settleAbandoned(slot int, lease *locking.Lease) {
	ab := lease.Grant().Abandoned
	outcome, note, event := outAbandoned, outAbandoned, "run.abandoned"
	if !ab.Started {
		outcome, note, event = outMayHaveStarted, outMissed, "slot.missed"
	}
	if rec, ok := a.recorded(slot, ab); ok {
		// closeRecorded: the history records the run at least as
		// strongly; closed with that entry, not reported again.
		if a.step("close-recorded") {
			le := rec.LogEntry(slotTime(slot))
			a.endRetried(lease, locking.Ending{DoneTTL: doneTTL, Note: string(rec.Outcome), Entry: &le, Keep: a.w.keep()})
		}
		return
	}
	if !a.step("settle-end") {
		return
	}
	// The entry names its settler (history.Entry.SettleID): a settler's
	// retried end counts the stores holding its own entry.
	e := settledEntry(slot, outcome, ab.ID, ab.Holder, a.name, lease.Grant().ID)
	if a.endRetried(lease, locking.Ending{DoneTTL: doneTTL, Note: note, Entry: &e, Keep: a.w.keep()}) {
		a.w.report(a, event, slot, ab.ID)
	}
}

// reconciler is one pass of reconcile and pass.job: it takes the
// reconciler's lease; reads the log; where a slot has no entry, reads the
// claims, then the log again; then, slot by slot, oldest first: a slot
// with an entry is judged; one with an open claim is settled
// (settleOrphan) and ends the pass; else it writes the missed entry,
// fenced by the lease's token and only where the slot has none
// (IfAbsent), and logs slot.missed only when its write added it — or,
// for a slot the job's pause covers (ReadPause), skipped paused. One
// missed reason (unknown).
func reconciler(a *actor) {
	ctx := context.Background()
	if !a.first("reconcile", 0, forever) {
		return
	}
	lease, err := a.locker.Acquire(ctx, locking.Key{Family: fleetFamily, Name: reconcilerName}, ttl)
	if err != nil {
		return
	}
	have, err := a.slotsLogged()
	if err != nil || len(have) == a.w.cfg.slots {
		return
	}
	claims, err := a.locker.ReadClaims(ctx, family)
	if err != nil {
		return
	}
	if have, err = a.slotsLogged(); err != nil {
		return
	}
	paused, err := a.readPause()
	if err != nil {
		return
	}
	for slot := range a.w.cfg.slots {
		switch {
		case have[slot]:
		case slices.Contains(claims, slotKey(slot)):
			a.w.report(a, "stalled", slot, "")
			a.settleOrphan(slot)
			return
		default:
			code := outMissed
			if paused.Covers(slotTime(slot)) {
				code = outSkippedPaused
			}
			err := a.locker.AppendLog(ctx, family, locking.LogAppend{Entry: entry(slot, code, "", ""), Keep: a.w.keep(),
				Fence: reconcilerName, Token: lease.Token(), IfAbsent: true})
			if errors.Is(err, locking.ErrLogHasEntry) {
				break
			}
			if err != nil {
				return
			}
			a.w.report(a, "slot."+code, slot, "")
		}
	}
}

// The reconciler's lease (scheduler.FleetFamily) and the fence of its
// writes in the job's family.
const (
	fleetFamily    = "_fleet"
	reconcilerName = "reconciler"
)

// slotsLogged reads the job's log once: the slots with an entry.
func (a *actor) slotsLogged() (map[int]bool, error) {
	log, err := a.locker.ReadLog(context.Background(), family, 1, a.w.readLimit())
	have := map[int]bool{}
	for _, e := range log {
		if s := int(e.Score) - 1; s >= 0 && s < a.w.cfg.slots {
			have[s] = true
		}
	}
	return have, err
}

// finalRead notes every slot's history entries and open claims.
func finalRead(a *actor) {
	if !a.step("read") {
		return
	}
	claims, _ := a.locker.ReadClaims(context.Background(), family)
	all, _ := a.readFrom(0)
	for slot := range a.w.cfg.slots {
		got, _ := a.readLog(slot)
		a.w.mu.Lock()
		a.w.final[slot] = got
		a.w.logs[slot] = a.w.storeLogs(slot)
		a.w.trimmed[slot] = int64(slot+1) < historyReach(all, a.w.keep())
		a.w.open[slot] = slices.Contains(claims, slotKey(slot))
		a.w.mu.Unlock()
	}
}

// recorded is scheduler.closeRecorded's read: the join of slot's entries
// when it records the run of the claim ab taken over at least as strongly
// as settling it would (recordsRun).
func (a *actor) recorded(slot int, ab *locking.Abandoned) (history.Entry, bool) {
	if !closeRecordedOn || !a.step("settle-read") {
		return history.Entry{}, false
	}
	got, err := a.readLog(slot)
	if err != nil {
		return history.Entry{}, false
	}
	e, found := joinOf(got)
	return e, recordsRun(e, found, ab)
}

// readLog returns slot's history entries, in the order the stores' merge
// gives them (newest first, equal scores by value): the order a reader
// of the product meets them in.
func (a *actor) readLog(slot int) ([]string, error) {
	log, err := a.readFrom(slot)
	return valuesOf(log, slot), err
}

// readFrom reads the log from slot's score on, newest first.
func (a *actor) readFrom(slot int) ([]locking.LogEntry, error) {
	return a.locker.ReadLog(context.Background(), family, int64(slot+1), a.w.readLimit())
}

// valuesOf is slot's entries in log, in its order.
func valuesOf(log []locking.LogEntry, slot int) []string {
	var out []string
	for _, e := range log {
		if e.Score == int64(slot+1) {
			out = append(out, e.Value)
		}
	}
	return out
}

func slotOf(k locking.Key) int {
	n, _ := strings.CutPrefix(k.Name, "slot:")
	return int(n[0] - '0')
}

// skipReason is the scheduler's reason for a refused claim (attempt.lost).
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
