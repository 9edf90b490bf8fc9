package scheduler

import (
	"context"
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
//
// A claim that took over an abandoned one is an attempt's verdict
// (guards.go, abandoned), settled by its exit (end.go, settleAbandoned);
// an orphan the stores pointed to is taken over here first.

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
		// A leftover on a minority of the stores that no store shows
		// started (a started one is granted as abandoned), or settled
		// meanwhile with its marker gone: claiming it must not run it.
		// Close it, so that no store points to it again.
		s.endLease(j.name(), slotString(t), lease, j.doneTTL, string(history.OutcomeAbandoned))
		s.log.Debug("abandoned claim closed without an entry: no store shows it started, and it holds no majority "+
			"(a node that missed a run's end, or a request run after its acquisition failed)",
			"event", evMisfireCheck, "job", j.name(), "slot", slotString(t))
		return
	}
	s.settleAbandoned(j, t, lease)
}

// closeRecorded closes the claim lease took over from ab without a
// second report when the slot history already records ab's run at least
// as strongly as settling it would (its own end, or a settler's verdict),
// or ab is unconfirmed and the history records a run's own end:
// a claim left on some stores after its outcome was written — an end, or
// a settler's end, that missed them — is closed, not reported again. The
// recorded entry goes with the end, so that it stands on a majority
// (it may have reached a minority only). False, and nothing done, when
// the history says less or cannot tell: the caller settles the claim.
func (s *Scheduler) closeRecorded(j *job, t time.Time, lease *locking.Lease, ab *locking.Abandoned) bool {
	if s.cfg.HistoryKeep <= 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	e, found, err := s.slotRecorded(ctx, j.name(), t)
	cancel()
	settled := history.MayHaveRun
	if ab.Started {
		settled = history.RanUnfinished
	}
	// An unconfirmed claim of a slot whose run ended (its own end is
	// recorded) is not that run's: a settler's takeover that died before
	// closing it (a settler runs no body). The slot ran; saying it may
	// have started would report a missed slot that ran.
	ours := e.RunID == ab.ID || (!ab.Started && e.Evidence() == history.Ran)
	if err != nil || !found || !ours || e.Evidence() < settled {
		return false
	}
	name, slot := j.name(), slotString(t)
	s.endLeaseThen(pendingEnd{job: name, slot: slot, lease: lease, doneTTL: j.doneTTL, note: string(e.Outcome),
		entry: logged(e, t), then: func() {
			s.log.Debug("abandoned claim closed: the slot history already records its run", "event", evMisfireCheck,
				"job", name, "slot", slot, "run_id", ab.ID, "holder", ab.Holder, "outcome", e.Outcome)
			s.recordHandled(j, t)
		}})
	return true
}
