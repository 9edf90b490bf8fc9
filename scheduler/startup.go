package scheduler

import (
	"errors"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// The start-up check: slots that passed while no replica ran them, found
// from the job's record when a replica starts, go to the misfire policy
// (misfire.go).

// startupCheck looks, once per job at Run's start, for slots that passed
// while no replica ran them: slots after the job's record that were due by
// the start (the loop fires those due after it).
// It hands them to the misfire policy once every replica that could still
// fire one of them normally (clocks up to MaxClockSkew behind, up to
// Lateness late) has tried it.
func (s *Scheduler) startupCheck(j *job, start time.Time) {
	name := j.name()
	// Read the record now, before this replica's own runs move it.
	rec, err := s.outcomes.readRecord(name)
	if err != nil {
		s.log.Debug("missed slot check: record unreadable", "event", evMisfireCheck, "job", name, "error", err.Error())
		return
	}
	if rec == 0 {
		return // never ran: nothing can have been missed
	}
	last := j.spec.lastDueBy(start)
	if last.IsZero() || last.Unix() <= rec {
		return
	}
	late := countSlots(j.spec.Schedule, time.Unix(rec, 0), last)
	if late.count == 0 {
		return
	}
	// Decide only once every replica that could fire these slots normally
	// has tried: the slot lock then tells handled from missed.
	if !s.sleep(start.Add(s.recoverAfter()).Sub(s.clock.Now()), s.stopping) {
		return
	}
	// Under skip, the latest slot is claimed first (probeLate), so that N
	// replicas starting together log the miss once: the one that wins it.
	if s.recoverLate(j, late) || !s.probeLate(j, late.last) {
		return
	}
	s.logLate(name, late, lateNote(j))
}

// prevSlot returns the latest slot <= t, or zero when none in five years.
func prevSlot(sched Schedule, t time.Time) time.Time {
	for _, w := range []time.Duration{time.Minute, time.Hour, 25 * time.Hour, 32 * 24 * time.Hour,
		367 * 24 * time.Hour, 5 * 367 * 24 * time.Hour} {
		var last time.Time
		n := 0
		for x := sched.Next(t.Add(-w)); !x.IsZero() && !x.After(t) && n < 1_000_000; x = sched.Next(x) {
			last = x
			n++
		}
		if !last.IsZero() {
			return last
		}
	}
	return time.Time{}
}

// countSlots describes the slots in (after, upto]; upto must be a slot.
func countSlots(sched Schedule, after, upto time.Time) lateRange {
	var r lateRange
	for x := sched.Next(after); !x.IsZero() && !x.After(upto); x = sched.Next(x) {
		if r.count >= maxCatchUp {
			r.atLeast = true
			r.prev, r.last = time.Time{}, upto
			break
		}
		r.add(x)
	}
	return r
}

// probeLate claims missed slot t of j, as every replica that fired it
// would have, and reports whether t is this replica's to log as skipped
// late: then its claim is closed with the done marker and the history
// entry skipped/late, which the reconciler finds. A slot that is done, or
// claimed by a run going on, is not; nor is one whose claim was abandoned
// (it is settled as such) or found on a minority of the stores, nor one
// the stores cannot be asked about (its slots fire into no_quorum skips).
func (s *Scheduler) probeLate(j *job, t time.Time) bool {
	name, slot := j.name(), slotString(t)
	until := s.clock.Now().Add(time.Second)
	lease, err := s.acquire(name, history.SlotKey(name, t), retryPolicy{splitUntil: until, quorumUntil: until, claim: true})
	if pe := (*locking.PausedError)(nil); errors.As(err, &pe) && pe.Pause.Covers(j.spec.Due(t)) {
		// Refused by the pause that covers the slot: skipped paused, as the
		// replicas that fired it would have logged it had any been up (a
		// pause that began after the slot leaves it to the reconciler).
		s.pausedSlot(j, t, pe.Pause)
		return false
	}
	if err != nil {
		s.log.Debug("missed slot check: not taken", "event", evMisfireCheck, "job", name, "slot", slot,
			"error", err.Error())
		return false
	}
	if o := lease.Grant().Orphan; o != nil {
		s.spawn(func() { s.settlement.settleOrphan(j, o) })
	}
	switch {
	case lease.Grant().Abandoned != nil:
		s.settlement.settleAbandoned(j, t, lease)
		return false
	case lease.Grant().Leftover:
		s.outcomes.endLease(name, slot, lease, 0, "")
		s.log.Debug("missed slot check: a claim of the slot is on a minority of the stores", "event", evMisfireCheck,
			"job", name, "slot", slot)
		return false
	case lease.Grant().Pause.Covers(j.spec.Due(t)):
		s.outcomes.endLease(name, slot, lease, 0, "")
		s.pausedSlot(j, t, lease.Grant().Pause)
		return false
	}
	// The history check of a fired slot, and its exit when it says no.
	a := s.newAttempt(j, t, originScheduled)
	a.claim = lease
	if v := a.recorded(); v.act != actNext {
		a.exit(v)
		return false
	}
	s.outcomes.endHandled(pendingEnd{job: name, slot: slot, lease: lease, doneTTL: j.doneTTL, note: string(history.ReasonLate),
		entry: logged(history.Entry{Slot: slot, Outcome: history.OutcomeSkipped, Reason: history.ReasonLate, Replica: s.cfg.Replica}, t)}, j, t)
	return true
}
