package scheduler

import (
	"errors"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// probe is what a start-up probe of a missed slot found (probeLate).
type probe int

const (
	// probeOthers: not this replica's to log — done, claimed by a run
	// going on, abandoned (settled as such), on a minority of the stores,
	// or the stores could not be asked (its slots fire into no_quorum
	// skips).
	probeOthers probe = iota
	// probeMissed: this replica's to log as skipped late; its claim is
	// closed with the done marker and the history entry skipped/late,
	// which the reconciler finds.
	probeMissed
	// probePaused: the job's pause covers it, and it was logged skipped
	// paused, as every replica that fired it would have.
	probePaused
)

// probeLate claims missed slot t of j, as every replica that fired it
// would have, and says what it found.
func (ap *attempts) probeLate(j *job, t time.Time) probe {
	name, slot := j.name(), slotString(t)
	until := ap.clock.Now().Add(time.Second)
	lease, err := ap.locks.acquire(name, history.SlotKey(name, t), retryPolicy{splitUntil: until, quorumUntil: until, claim: true})
	if pe := (*locking.PausedError)(nil); errors.As(err, &pe) && pe.Pause.Covers(j.spec.Due(t)) {
		// Refused by the pause that covers the slot: skipped paused, as the
		// replicas that fired it would have logged it had any been up (a
		// pause that began after the slot leaves it to the reconciler).
		ap.pausedSlot(j, t, pe.Pause)
		return probePaused
	}
	if err != nil {
		ap.log.Debug("missed slot check: not taken", "event", evMisfireCheck, "job", name, "slot", slot,
			"error", err.Error())
		return probeOthers
	}
	if o := lease.Grant().Orphan; o != nil {
		ap.spawn(func() { ap.settlement.settleOrphan(j, o) })
	}
	switch {
	case lease.Grant().Abandoned != nil:
		ap.settlement.settleAbandoned(j, t, lease)
		return probeOthers
	case lease.Grant().Leftover:
		ap.outcomes.endLease(name, slot, lease, 0, "")
		ap.log.Debug("missed slot check: a claim of the slot is on a minority of the stores", "event", evMisfireCheck,
			"job", name, "slot", slot)
		return probeOthers
	case lease.Grant().Pause.Covers(j.spec.Due(t)):
		ap.outcomes.endLease(name, slot, lease, 0, "")
		ap.pausedSlot(j, t, lease.Grant().Pause)
		return probePaused
	}
	// The history check of a fired slot, and its exit when it says no.
	a := ap.newAttempt(j, t, originScheduled)
	a.claim = lease
	if v := a.recorded(); v.act != actNext {
		a.exit(v)
		return probeOthers
	}
	ap.outcomes.endHandled(pendingEnd{job: name, slot: slot, lease: lease, doneTTL: j.markerTTL(), note: string(history.ReasonLate),
		entry: logged(history.Entry{Slot: slot, Outcome: history.OutcomeSkipped, Reason: history.ReasonLate, Replica: ap.cfg.Replica}, t)}, j, t)
	return probeMissed
}
