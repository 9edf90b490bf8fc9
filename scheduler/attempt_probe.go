package scheduler

import (
	"errors"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// probeLate claims missed slot t of j, as every replica that fired it
// would have, and reports whether t is this replica's to log as skipped
// late: then its claim is closed with the done marker and the history
// entry skipped/late, which the reconciler finds. A slot that is done, or
// claimed by a run going on, is not; nor is one whose claim was abandoned
// (it is settled as such) or found on a minority of the stores, nor one
// the stores cannot be asked about (its slots fire into no_quorum skips).
func (ap *attempts) probeLate(j *job, t time.Time) bool {
	name, slot := j.name(), slotString(t)
	until := ap.clock.Now().Add(time.Second)
	lease, err := ap.locks.acquire(name, history.SlotKey(name, t), retryPolicy{splitUntil: until, quorumUntil: until, claim: true})
	if pe := (*locking.PausedError)(nil); errors.As(err, &pe) && pe.Pause.Covers(j.spec.Due(t)) {
		// Refused by the pause that covers the slot: skipped paused, as the
		// replicas that fired it would have logged it had any been up (a
		// pause that began after the slot leaves it to the reconciler).
		ap.pausedSlot(j, t, pe.Pause)
		return false
	}
	if err != nil {
		ap.log.Debug("missed slot check: not taken", "event", evMisfireCheck, "job", name, "slot", slot,
			"error", err.Error())
		return false
	}
	if o := lease.Grant().Orphan; o != nil {
		ap.spawn(func() { ap.settlement.settleOrphan(j, o) })
	}
	switch {
	case lease.Grant().Abandoned != nil:
		ap.settlement.settleAbandoned(j, t, lease)
		return false
	case lease.Grant().Leftover:
		ap.outcomes.endLease(name, slot, lease, 0, "")
		ap.log.Debug("missed slot check: a claim of the slot is on a minority of the stores", "event", evMisfireCheck,
			"job", name, "slot", slot)
		return false
	case lease.Grant().Pause.Covers(j.spec.Due(t)):
		ap.outcomes.endLease(name, slot, lease, 0, "")
		ap.pausedSlot(j, t, lease.Grant().Pause)
		return false
	}
	// The history check of a fired slot, and its exit when it says no.
	a := ap.newAttempt(j, t, originScheduled)
	a.claim = lease
	if v := a.recorded(); v.act != actNext {
		a.exit(v)
		return false
	}
	ap.outcomes.endHandled(pendingEnd{job: name, slot: slot, lease: lease, doneTTL: j.markerTTL(), note: string(history.ReasonLate),
		entry: logged(history.Entry{Slot: slot, Outcome: history.OutcomeSkipped, Reason: history.ReasonLate, Replica: ap.cfg.Replica}, t)}, j, t)
	return true
}
