package scheduler

import (
	"context"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"

	"github.com/slotlock/slotlock/locking"
)

// The one exit of a slot attempt (attempt.go). It carries out the
// verdict: it ends the attempt's leases, writes the slot's outcome (done
// marker, history entry, the job's record), logs the event and closes the
// span, in that order, so that what the log reports is on the stores.
// Below it, what ending a lease involves: the job lease and the record in
// the same call, a retry once the stores answer again, the job's record.

// exit carries out verdict v.
func (a *attempt) exit(v verdict) {
	ap := a.ap
	switch v.act {
	case actRan:
		a.span.ran(*v.entry)
		a.endRun(v.entry)
	case actSettle:
		a.span.settled()
		ap.settlement.settleAbandoned(a.j, a.t, a.claim)
	case actDone:
		a.span.skip(v.reason)
		if v.entry != nil {
			// The line follows the write: the time lets the reconciler
			// tell whether this process lived to log it (history.AfterWrite).
			v.entry.WrittenMS = ap.clock.Now().UnixMilli()
		}
		a.end(a.ending(string(v.reason), v.entry))
		a.logSkip(v)
	case actMisfire:
		a.span.skip(v.reason)
		a.release()
		ap.misfire.handle(a.j, lateRange{first: a.t, last: a.t, count: 1})
	case actPaused:
		a.span.skip(v.reason)
		a.release()
		ap.pausedSlot(a.j, a.t, a.pause)
	case actStopped:
		a.span.skip(v.reason)
		a.release()
	case actRelease:
		a.span.skip(v.reason)
		a.release()
		a.logSkip(v)
	}
	if a.joined != nil {
		ap.outcomes.endLease(a.name, a.slot, a.joined, 0, "") // taken with the claim, not taken over
	}
	endPermit(a)
	a.span.end()
}

// endRun ends the leases of the run whose outcome is h: a manual run's is
// released; a slot's claim becomes its done marker with the history
// entry, the job lease released in the same call, so that the next slot
// may start at once, here or elsewhere.
func (a *attempt) endRun(h *history.Entry) {
	ap := a.ap
	if a.origin == originManual {
		ap.outcomes.endLease(a.name, a.slot, a.claim, 0, "")
		return
	}
	p := a.ending(string(h.Outcome), h)
	j, t, e := a.j, a.t, *h
	p.then = func() {
		ap.notifyWritten(j, t, e) // the end wrote the entry: this replica is its writer of record
		if a.origin.fired() && e.Outcome == history.OutcomeFailed && j.spec.PauseOnFailure > 0 {
			ap.spawn(func() { ap.control.pauseOnFailure(j) })
		}
	}
	a.end(p)
	if a.orphan != nil {
		ap.settlement.settleOrphan(a.j, a.orphan) // a backfill's: now, this process may exit next
	}
}

// ending is the end of a handled slot: its claim a done marker with note
// and entry (when set), and the job lease released with it.
func (a *attempt) ending(note string, entry *history.Entry) pendingEnd {
	p := pendingEnd{job: a.name, slot: a.slot, lease: a.claim, doneTTL: a.j.markerTTL(), note: note, jobLease: a.jobLease}
	if entry != nil {
		p.entry = logged(*entry, a.t)
	}
	return p
}

// end ends a handled slot's leases as p says; a fired slot's moves the
// job's record too (endHandled).
func (a *attempt) end(p pendingEnd) {
	if a.origin.fired() {
		a.ap.outcomes.endHandled(p, a.j, a.t)
		return
	}
	a.ap.outcomes.endLeaseThen(p)
}

// release hands the claim back, if won, and the job lease, if taken: the
// slot is not handled here.
func (a *attempt) release() {
	if a.claim != nil {
		a.ap.outcomes.endLease(a.name, a.slot, a.claim, 0, "")
	}
	if a.jobLease != nil {
		a.ap.outcomes.endLease(a.name, a.slot, a.jobLease, 0, "")
	}
}

// logSkip logs slot.skipped for v (nothing when it has no reason). A
// fired slot lost for want of a majority is noted for the recovery when
// the quorum is back.
func (a *attempt) logSkip(v verdict) {
	if v.reason == "" {
		return
	}
	attrs := v.attrs
	if a.origin == originBackfill {
		attrs = append(attrs, "backfill", true)
	}
	a.ap.skipped(a.name, a.slot, v.reason, 1, attrs...)
	if a.origin.fired() && (v.reason == history.ReasonNoQuorum || v.reason == history.ReasonSlowLock) {
		a.ap.outage.noteOutage(a.j, a.t)
	}
}

// pendingEnd is how a lease ends: released, or (doneTTL > 0) a done
// marker with note and, when entry is set, the slot's history entry. One
// that the stores did not take for want of a majority is kept, and ended
// again when they answer (outage.go).
type pendingEnd struct {
	job, slot string // for the logs
	lease     *locking.Lease
	doneTTL   time.Duration
	note      string
	entry     *locking.LogEntry
	// jobLease, when set, is the run's job lease, released in the same
	// call as lease is ended (locking.Lease.End); record, when set, the
	// job whose pending record that call advances too (endHandled).
	jobLease *locking.Lease
	record   *job
	then     func() // called once the stores accepted the end
}

// logged is h as the history entry of slot t.
func logged(h history.Entry, t time.Time) *locking.LogEntry {
	e := h.LogEntry(t)
	return &e
}

// pausedSlot logs slot t of j as skipped for pause p and moves the job's
// record past it.
func (ap *attempts) pausedSlot(j *job, t time.Time, p locking.Pause) {
	ap.outage.quorumSeen()
	ap.control.notePause(j, p)
	ap.skipped(j.name(), slotString(t), history.ReasonPaused, 1, pauseAttrs(p, "pause_reason")...)
	ap.outcomes.recordHandled(j, t)
	if ap.cfg.HistoryKeep > 0 {
		// Every replica writes the same entry: the history keeps one.
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		defer cancel()
		_ = ap.cfg.Locker.AppendLog(ctx, j.name(), locking.LogAppend{Entry: pausedEntry(t).LogEntry(t), Keep: ap.cfg.HistoryKeep})
	}
}
