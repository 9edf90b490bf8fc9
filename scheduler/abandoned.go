package scheduler

import (
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// A run that started is never started again: its slot's claim stays in the
// lock stores until the run ends. When its replica dies or freezes past its
// lease instead, the claim is abandoned, and the next replica that claims
// the slot takes it over (locking.Grant.Abandoned) — a recovery, a retry, the
// restarted replica's start-up check — or is pointed to it by the stores
// when it wins a later slot of the job (locking.Grant.Orphan). That replica, and
// only it (the takeover is a lease like any other), closes the slot with a
// done marker and reports it, once: the slot is accounted for and never
// run twice. What it reports depends on what the stores hold:
//
//   - the run confirmed its start (Abandoned.Started: a renewal after the
//     body began, within a second of it): run.abandoned, history outcome
//     abandoned;
//   - no confirmation: the replica stopped between winning the slot and
//     its first confirming renewal, and nobody can tell whether the body
//     began. It is not reported as a run (run.abandoned only for a run
//     that started) nor run again (it may have started): slot.missed with
//     reason unknown and may_have_started, history outcome missed with
//     MayHaveStarted, which backfill refuses.
//
// A claim left by an acquisition that failed is undone by its acquirer
// until every store answered (locking's undo), so it is never found here:
// such a slot has no claim, and is handled as not run (the misfire policy,
// the reconciler, backfill).

// settleAbandoned closes slot t of j, whose claim lease took over from a
// run that never ended, and reports it — once the done marker is on a
// majority: the marker is what stops every other replica from taking the
// claim over and reporting it again. When the stores do not accept it now,
// the end is retried when they answer (a retry recognises a marker that
// its lost first attempt left); when the lease expires meanwhile, the
// next replica pointed to the claim settles it instead.
func (s *Scheduler) settleAbandoned(j *job, t time.Time, lease *locking.Lease) {
	ab := lease.Grant().Abandoned
	if !ab.Started {
		s.settleUnconfirmed(j, t, lease)
		return
	}
	name, slot := j.name(), slotString(t)
	s.endLeaseThen(pendingEnd{job: name, slot: slot, lease: lease, doneTTL: j.doneTTL, note: string(history.OutcomeAbandoned),
		history: &history.Entry{Slot: slot, Outcome: history.OutcomeAbandoned, Replica: ab.Holder, RunID: ab.ID}, at: t,
		then: func() {
			s.log.Warn("run abandoned: its replica stopped renewing its lease before the run ended; the slot is not run again",
				"event", evRunAbandoned, "job", name, "slot", slot, "run_id", ab.ID, "holder", ab.Holder)
			s.metrics.RunAbandoned(name)
			s.recordHandled(j, t)
		}})
}

// settleUnconfirmed closes slot t of j, whose claim lease took over a
// claim that its holder never confirmed started, and reports it as missed
// with reason unknown, the run possibly started: once, as settleAbandoned.
func (s *Scheduler) settleUnconfirmed(j *job, t time.Time, lease *locking.Lease) {
	ab := lease.Grant().Abandoned
	name, slot := j.name(), slotString(t)
	s.endLeaseThen(pendingEnd{job: name, slot: slot, lease: lease, doneTTL: j.doneTTL, note: string(history.OutcomeMissed),
		history: &history.Entry{Slot: slot, Outcome: history.OutcomeMissed, Reason: history.ReasonUnknown, Replica: ab.Holder, RunID: ab.ID,
			MayHaveStarted: true}, at: t,
		then: func() {
			s.log.Warn("slot missed: its winner stopped before confirming that its run started; it may have started, so it is not run again",
				"event", evSlotMissed, "job", name, "slot", slot, "reason", string(history.ReasonUnknown), "may_have_started", true,
				"run_id", ab.ID, "holder", ab.Holder)
			s.metrics.SlotMissed(name, history.ReasonUnknown)
			s.metrics.JobOutcome(name, history.OutcomeMissed, t)
			s.recordHandled(j, t)
		}})
}

// settleOrphan takes over the abandoned claim o of job j that the stores
// pointed out, and reports it; it does nothing when another replica is at
// it, or the claim was settled meanwhile. One settlement per key at a time
// on this replica.
func (s *Scheduler) settleOrphan(j *job, o *locking.Abandoned) {
	t, ok := history.SlotOfKey(o.Key)
	if !ok || s.isStopping() {
		return
	}
	s.orphansMu.Lock()
	if s.orphans == nil {
		s.orphans = make(map[locking.Key]bool)
	}
	busy := s.orphans[o.Key]
	s.orphans[o.Key] = true
	s.orphansMu.Unlock()
	if busy {
		return
	}
	defer func() {
		s.orphansMu.Lock()
		delete(s.orphans, o.Key)
		s.orphansMu.Unlock()
	}()
	until := s.clock.Now().Add(s.lateness)
	lease, err := s.acquire(j.name(), o.Key, retryPolicy{splitUntil: until, quorumUntil: until, claim: true})
	if err != nil {
		s.log.Debug("abandoned claim not taken over", "event", evMisfireCheck, "job", j.name(),
			"slot", slotString(t), "error", err.Error())
		return
	}
	if lease.Grant().Abandoned == nil {
		// A leftover on a minority of the stores, or settled meanwhile
		// with its marker gone: claiming it must not run it. Close it, so
		// that no store points to it again.
		s.endLease(j.name(), slotString(t), lease, j.doneTTL, string(history.OutcomeAbandoned))
		return
	}
	s.settleAbandoned(j, t, lease)
}
