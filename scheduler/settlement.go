package scheduler

import (
	"context"
	"sync"
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
// (guards.go, abandoned), settled by its exit through settleAbandoned below;
// an orphan the stores pointed to is taken over here first.

// settlement is the component that closes abandoned claims and reports
// them once. It owns the claims being settled on this replica; it claims
// through the lock layer (claims), writes through the ending of leases
// (ends) and reads the slot's recorded outcome (outcomes).
type settlement struct {
	*engine
	claims   claimAcquirer
	ends     leaseEnder
	outcomes outcomeReader

	mu      sync.Mutex
	orphans map[locking.Key]bool // abandoned claims being settled
}

// claimAcquirer takes a slot's claim with the retries of policy p
// (attempt.go).
type claimAcquirer interface {
	acquire(job string, key locking.Key, p retryPolicy) (*locking.Lease, error)
}

// leaseEnder ends leases and writes what comes with the end: the done
// marker, the history entry, the job's record (outcomes.go).
type leaseEnder interface {
	endLease(job, slot string, l *locking.Lease, doneTTL time.Duration, note string)
	endLeaseThen(p pendingEnd)
	recordHandled(j *job, t time.Time)
}

// outcomeReader reads a slot's outcome from the history (outcomes_history.go).
type outcomeReader interface {
	slotRecorded(ctx context.Context, job string, t time.Time) (history.Entry, bool, error)
}

func newSettlement(e *engine, claims claimAcquirer, ends leaseEnder, outcomes outcomeReader) *settlement {
	return &settlement{engine: e, claims: claims, ends: ends, outcomes: outcomes, orphans: map[locking.Key]bool{}}
}

// settleOrphan takes over the abandoned claim o of job j that the stores
// pointed out, and reports it; it does nothing when another replica is at
// it, or the claim was settled meanwhile. One settlement per key at a time
// on this replica.
func (st *settlement) settleOrphan(j *job, o *locking.Abandoned) {
	t, ok := history.SlotOfKey(o.Key)
	if !ok || st.isStopping() {
		return
	}
	st.mu.Lock()
	busy := st.orphans[o.Key]
	st.orphans[o.Key] = true
	st.mu.Unlock()
	if busy {
		return
	}
	defer func() {
		st.mu.Lock()
		delete(st.orphans, o.Key)
		st.mu.Unlock()
	}()
	until := st.clock.Now().Add(st.lateness)
	lease, err := st.claims.acquire(j.name(), o.Key, retryPolicy{splitUntil: until, quorumUntil: until, claim: true})
	if err != nil {
		st.log.Debug("abandoned claim not taken over", "event", evMisfireCheck, "job", j.name(),
			"slot", slotString(t), "error", err.Error())
		return
	}
	if lease.Grant().Abandoned == nil {
		// A leftover on a minority of the stores that no store shows
		// started (a started one is granted as abandoned), or settled
		// meanwhile with its marker gone: claiming it must not run it.
		// Close it, so that no store points to it again.
		st.ends.endLease(j.name(), slotString(t), lease, j.markerTTL(), string(history.OutcomeAbandoned))
		st.log.Debug("abandoned claim closed without an entry: no store shows it started, and it holds no majority "+
			"(a node that missed a run's end, or a request run after its acquisition failed)",
			"event", evMisfireCheck, "job", j.name(), "slot", slotString(t))
		return
	}
	st.settleAbandoned(j, t, lease)
}

// closeRecorded closes the claim lease took over from ab without a
// second report when the slot history already records ab's run at least
// as strongly as settling it would (its own end, or a settler's verdict),
// or ab is unconfirmed and the history records a run's own end:
// a claim left on some stores after its outcome was written — an end, or
// a settler's end, that missed them — is closed, not reported again. The
// recorded entry goes with the end, so that it stands on a majority
// (it may have reached a minority only). False, and nothing done, when
// the history says less or cannot tell, or when what it records is a
// settler's verdict while the claim stood on a majority (ab.Majority):
// that settler's end reached a minority, so it never reported the slot,
// and its retry cannot succeed now that this lease holds the claim — the
// caller settles the claim, and its report is the slot's only one.
func (st *settlement) closeRecorded(j *job, t time.Time, lease *locking.Lease, ab *locking.Abandoned) bool {
	if st.cfg.HistoryKeep <= 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	e, found, err := st.outcomes.slotRecorded(ctx, j.name(), t)
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
	unreported := e.SettledBy != "" && ab.Majority
	if err != nil || !found || !ours || e.Evidence() < settled || unreported {
		return false
	}
	name, slot := j.name(), slotString(t)
	st.ends.endLeaseThen(pendingEnd{job: name, slot: slot, lease: lease, doneTTL: j.markerTTL(), note: string(e.Outcome),
		entry: logged(e, t), then: func() {
			st.log.Debug("abandoned claim closed: the slot history already records its run", "event", evMisfireCheck,
				"job", name, "slot", slot, "run_id", ab.ID, "holder", ab.Holder, "outcome", e.Outcome)
			st.ends.recordHandled(j, t)
		}})
	return true
}

// settleAbandoned closes slot t of j, whose claim lease took over from a
// run that never ended, and reports it — once the done marker is on a
// majority: the marker is what stops every other replica from taking the
// claim over and reporting it again. When the stores do not accept it now,
// the end is retried when they answer (a retry recognises a marker that
// its lost first attempt left); when the lease expires meanwhile, the
// next replica pointed to the claim settles it instead.
func (st *settlement) settleAbandoned(j *job, t time.Time, lease *locking.Lease) {
	ab := lease.Grant().Abandoned
	if st.closeRecorded(j, t, lease, ab) {
		return
	}
	if !ab.Started {
		st.settleUnconfirmed(j, t, lease)
		return
	}
	name, slot := j.name(), slotString(t)
	e := history.Entry{Slot: slot, Outcome: history.OutcomeAbandoned, Replica: ab.Holder, RunID: ab.ID,
		SettledBy: st.cfg.Replica, SettleID: lease.Grant().ID}
	st.ends.endLeaseThen(pendingEnd{job: name, slot: slot, lease: lease, doneTTL: j.markerTTL(), note: string(history.OutcomeAbandoned),
		entry: logged(e, t),
		then: func() {
			st.log.Warn("run abandoned: its replica stopped renewing its lease before the run ended; the slot is not run again",
				"event", evRunAbandoned, "job", name, "slot", slot, "run_id", ab.ID, "holder", ab.Holder)
			st.metrics.RunAbandoned(name)
			st.ends.recordHandled(j, t)
			st.notifyWritten(j, t, e)
		}})
}

// settleUnconfirmed closes slot t of j, whose claim lease took over a
// claim that its holder never confirmed started, and reports it as missed
// with reason unknown, the run possibly started: once, as settleAbandoned.
func (st *settlement) settleUnconfirmed(j *job, t time.Time, lease *locking.Lease) {
	ab := lease.Grant().Abandoned
	name, slot := j.name(), slotString(t)
	e := history.Entry{Slot: slot, Outcome: history.OutcomeMissed, Reason: history.ReasonUnknown, Replica: ab.Holder, RunID: ab.ID,
		MayHaveStarted: true, SettledBy: st.cfg.Replica, SettleID: lease.Grant().ID}
	st.ends.endLeaseThen(pendingEnd{job: name, slot: slot, lease: lease, doneTTL: j.markerTTL(), note: string(history.OutcomeMissed),
		entry: logged(e, t),
		then: func() {
			st.log.Warn("slot missed: its winner stopped before confirming that its run started; it may have started, so it is not run again",
				"event", evSlotMissed, "job", name, "slot", slot, "reason", history.ReasonUnknown, "may_have_started", true,
				"run_id", ab.ID, "holder", ab.Holder)
			st.metrics.SlotMissed(name, history.ReasonUnknown)
			st.metrics.JobOutcome(name, history.OutcomeMissed, t)
			st.ends.recordHandled(j, t)
			st.notifyWritten(j, t, e)
		}})
}
