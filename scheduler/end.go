package scheduler

import (
	"context"
	"errors"
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
	s := a.s
	switch v.act {
	case actRan:
		a.span.ran(*v.entry)
		a.endRun(v.entry)
	case actSettle:
		a.span.settled()
		s.settleAbandoned(a.j, a.t, a.claim)
	case actDone:
		a.span.skip(v.reason)
		a.end(a.ending(string(v.reason), v.entry))
		a.logSkip(v)
	case actMisfire:
		a.span.skip(v.reason)
		a.release()
		s.misfire(a.j, lateRange{first: a.t, last: a.t, count: 1})
	case actPaused:
		a.span.skip(v.reason)
		a.release()
		s.pausedSlot(a.j, a.t, a.pause)
	case actStopped:
		a.span.skip(v.reason)
		a.release()
	case actRelease:
		a.span.skip(v.reason)
		a.release()
		a.logSkip(v)
	}
	if a.joined != nil {
		s.endLease(a.name, a.slot, a.joined, 0, "") // taken with the claim, not taken over
	}
	a.span.end()
}

// endRun ends the leases of the run whose outcome is h: a manual run's is
// released; a slot's claim becomes its done marker with the history
// entry, the job lease released in the same call, so that the next slot
// may start at once, here or elsewhere.
func (a *attempt) endRun(h *history.Entry) {
	s := a.s
	if a.origin == originManual {
		s.endLease(a.name, a.slot, a.claim, 0, "")
		return
	}
	p := a.ending(string(h.Outcome), h)
	j, t, e := a.j, a.t, *h
	p.then = func() {
		s.notifyWritten(j, t, e) // the end wrote the entry: this replica is its writer of record
		if a.origin.fired() && e.Outcome == history.OutcomeFailed && j.spec.PauseOnFailure > 0 {
			s.spawn(func() { s.pauseOnFailure(j) })
		}
	}
	a.end(p)
	if a.orphan != nil {
		s.settleOrphan(a.j, a.orphan) // a backfill's: now, this process may exit next
	}
}

// ending is the end of a handled slot: its claim a done marker with note
// and entry (when set), and the job lease released with it.
func (a *attempt) ending(note string, entry *history.Entry) pendingEnd {
	p := pendingEnd{job: a.name, slot: a.slot, lease: a.claim, doneTTL: a.j.doneTTL, note: note, jobLease: a.jobLease}
	if entry != nil {
		p.entry = logged(*entry, a.t)
	}
	return p
}

// end ends a handled slot's leases as p says; a fired slot's moves the
// job's record too (endHandled).
func (a *attempt) end(p pendingEnd) {
	if a.origin.fired() {
		a.s.endHandled(p, a.j, a.t)
		return
	}
	a.s.endLeaseThen(p)
}

// release hands the claim back, if won, and the job lease, if taken: the
// slot is not handled here.
func (a *attempt) release() {
	if a.claim != nil {
		a.s.endLease(a.name, a.slot, a.claim, 0, "")
	}
	if a.jobLease != nil {
		a.s.endLease(a.name, a.slot, a.jobLease, 0, "")
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
	a.s.skipped(a.name, a.slot, v.reason, 1, attrs...)
	if a.origin.fired() && (v.reason == history.ReasonNoQuorum || v.reason == history.ReasonSlowLock) {
		a.s.noteOutage(a.j, a.t)
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
func (s *Scheduler) pausedSlot(j *job, t time.Time, p locking.Pause) {
	s.quorumSeen()
	s.notePause(j, p)
	s.skipped(j.name(), slotString(t), history.ReasonPaused, 1, pauseAttrs(p, "pause_reason")...)
	s.recordHandled(j, t)
	if s.cfg.HistoryKeep > 0 {
		// Every replica writes the same entry: the history keeps one.
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		defer cancel()
		_ = s.cfg.Locker.AppendLog(ctx, j.name(), locking.LogAppend{Entry: pausedEntry(t).LogEntry(t), Keep: s.cfg.HistoryKeep})
	}
}

// settleAbandoned closes slot t of j, whose claim lease took over from a
// run that never ended, and reports it — once the done marker is on a
// majority: the marker is what stops every other replica from taking the
// claim over and reporting it again. When the stores do not accept it now,
// the end is retried when they answer (a retry recognises a marker that
// its lost first attempt left); when the lease expires meanwhile, the
// next replica pointed to the claim settles it instead.
func (s *Scheduler) settleAbandoned(j *job, t time.Time, lease *locking.Lease) {
	ab := lease.Grant().Abandoned
	if s.closeRecorded(j, t, lease, ab) {
		return
	}
	if !ab.Started {
		s.settleUnconfirmed(j, t, lease)
		return
	}
	name, slot := j.name(), slotString(t)
	e := history.Entry{Slot: slot, Outcome: history.OutcomeAbandoned, Replica: ab.Holder, RunID: ab.ID,
		SettledBy: s.cfg.Replica, SettleID: lease.Grant().ID}
	s.endLeaseThen(pendingEnd{job: name, slot: slot, lease: lease, doneTTL: j.doneTTL, note: string(history.OutcomeAbandoned),
		entry: logged(e, t),
		then: func() {
			s.log.Warn("run abandoned: its replica stopped renewing its lease before the run ended; the slot is not run again",
				"event", evRunAbandoned, "job", name, "slot", slot, "run_id", ab.ID, "holder", ab.Holder)
			s.metrics.RunAbandoned(name)
			s.recordHandled(j, t)
			s.notifyWritten(j, t, e)
		}})
}

// settleUnconfirmed closes slot t of j, whose claim lease took over a
// claim that its holder never confirmed started, and reports it as missed
// with reason unknown, the run possibly started: once, as settleAbandoned.
func (s *Scheduler) settleUnconfirmed(j *job, t time.Time, lease *locking.Lease) {
	ab := lease.Grant().Abandoned
	name, slot := j.name(), slotString(t)
	e := history.Entry{Slot: slot, Outcome: history.OutcomeMissed, Reason: history.ReasonUnknown, Replica: ab.Holder, RunID: ab.ID,
		MayHaveStarted: true, SettledBy: s.cfg.Replica, SettleID: lease.Grant().ID}
	s.endLeaseThen(pendingEnd{job: name, slot: slot, lease: lease, doneTTL: j.doneTTL, note: string(history.OutcomeMissed),
		entry: logged(e, t),
		then: func() {
			s.log.Warn("slot missed: its winner stopped before confirming that its run started; it may have started, so it is not run again",
				"event", evSlotMissed, "job", name, "slot", slot, "reason", history.ReasonUnknown, "may_have_started", true,
				"run_id", ab.ID, "holder", ab.Holder)
			s.metrics.SlotMissed(name, history.ReasonUnknown)
			s.metrics.JobOutcome(name, history.OutcomeMissed, t)
			s.recordHandled(j, t)
			s.notifyWritten(j, t, e)
		}})
}

// endLease ends a lease: a done marker living doneTTL with note, or a plain
// release when doneTTL is 0. A failure other than a lost lease is retried
// when the stores answer again.
func (s *Scheduler) endLease(job, slot string, l *locking.Lease, doneTTL time.Duration, note string) {
	s.endLeaseThen(pendingEnd{job: job, slot: slot, lease: l, doneTTL: doneTTL, note: note})
}

// endLeaseThen ends p.lease as endLease does and calls p.then once the
// stores accepted it (now or after a retry), never when the lease was lost.
func (s *Scheduler) endLeaseThen(p pendingEnd) {
	// The slot's end, the job lease's release and the job's record in one
	// call per store where they are given (locking.Lease.End); a plain
	// release or done marker otherwise.
	s.ending <- struct{}{}
	e := locking.Ending{DoneTTL: p.doneTTL, Note: p.note, Also: p.jobLease}
	if p.doneTTL > 0 && p.entry != nil && s.cfg.HistoryKeep > 0 {
		e.Entry, e.Keep = p.entry, s.cfg.HistoryKeep
	}
	var rec, prevAt time.Time
	var recOK bool
	if p.record != nil {
		if rec, prevAt, recOK = s.takeRecord(p.record); recOK {
			e.Record, e.RecordValue = lastKey(p.job), rec.Unix()
		}
	}
	res := p.lease.End(context.Background(), e)
	err := res.Err
	if recOK {
		s.recordWritten(p.record, rec, prevAt, res.Record)
	}
	if p.jobLease != nil && res.Also != nil {
		// Reported, and ended again alone when the stores answer.
		defer s.endLeaseFailed(pendingEnd{job: p.job, slot: p.slot, lease: p.jobLease}, res.Also)
	}
	p.jobLease, p.record = nil, nil // a retry ends the slot's lease alone
	<-s.ending
	if err == nil {
		if p.then != nil {
			p.then()
		}
		return
	}
	s.endLeaseFailed(p, err)
}

// endLeaseFailed logs why p's lease could not be ended and, unless it was
// lost, ends it again once the stores answer.
func (s *Scheduler) endLeaseFailed(p pendingEnd, err error) {
	if errors.Is(err, locking.ErrLockLost) {
		// Expired or taken over; already reported as lock.lost if a run
		// depended on it.
		s.log.Debug("lease was no longer held when ended", "event", evLockReleaseFailed,
			"job", p.job, "slot", p.slot, "key", p.lease.Grant().Key.Name, "error", err.Error())
		return
	}
	s.log.Warn("could not end lease; retrying when the lock stores answer, else it expires after its ttl",
		"event", evLockReleaseFailed, "job", p.job, "slot", p.slot, "key", p.lease.Grant().Key.Name, "error", err.Error())
	s.retryEnd(p)
}

// recordHandled notes that slot t of j was handled (run, or skipped for
// overlap or late) and advances the job's record <job>/last to it when
// recordDue says so.
func (s *Scheduler) recordHandled(j *job, t time.Time) {
	if s.recordDue(j, t) {
		s.flushRecord(j)
	}
}

// endHandled ends p.lease, the end of slot t of j, as endLeaseThen does,
// and advances the job's record in the same call when recordDue says so.
func (s *Scheduler) endHandled(p pendingEnd, j *job, t time.Time) {
	if s.recordDue(j, t) {
		p.record = j
	}
	s.endLeaseThen(p)
}

// recordDue notes that slot t of j was handled and reports whether the
// job's record should be written now — not after every slot: the record
// matters only once a slot's done marker may have expired (doneTTL), so
// it is written when the next slot is doneTTL/4 away or more, when this
// replica's last write is doneTTL/4 old, and at shutdown. It thus lags the
// latest handled slot by less than doneTTL/2, well before that slot's
// marker can expire (recover relies on this). The gap to the next slot is
// taken between their due times (jitter), when they are handled.
func (s *Scheduler) recordDue(j *job, t time.Time) bool {
	now := s.clock.Now()
	next := j.spec.Schedule.Next(t)
	j.mu.Lock()
	defer j.mu.Unlock()
	if t.After(j.recPending) {
		j.recPending = t
	}
	return s.isStopping() || next.IsZero() || j.spec.Due(next).Sub(j.spec.Due(t)) >= s.doneTTL/4 ||
		now.Sub(j.recWrittenAt) >= s.doneTTL/4
}

// flushRecord writes the job's pending record, if newer than the last write.
func (s *Scheduler) flushRecord(j *job) {
	v, prevAt, ok := s.takeRecord(j)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	s.inflight <- struct{}{}
	err := s.cfg.Locker.AdvanceRecord(ctx, lastKey(j.name()), v.Unix())
	<-s.inflight
	s.recordWritten(j, v, prevAt, err)
}

// takeRecord returns the job's pending record when it is newer than the
// last write, and notes a write as started (others racing here see a
// fresh write); prevAt is for recordWritten.
func (s *Scheduler) takeRecord(j *job) (v, prevAt time.Time, ok bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	v = j.recPending
	if !v.After(j.recWritten) {
		return v, prevAt, false
	}
	prevAt = j.recWrittenAt
	j.recWrittenAt = s.clock.Now()
	return v, prevAt, true
}

// recordWritten records the outcome of writing v (takeRecord).
func (s *Scheduler) recordWritten(j *job, v, prevAt time.Time, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err != nil {
		j.recWrittenAt = prevAt // try again at the next handled slot
		s.log.Warn("could not advance the job's last-slot record", "event", evLockReleaseFailed,
			"job", j.name(), "slot", slotString(v), "error", err.Error())
		return
	}
	if v.After(j.recWritten) {
		j.recWritten = v
	}
}

func (s *Scheduler) readRecord(job string) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	s.inflight <- struct{}{}
	defer func() { <-s.inflight }()
	return s.cfg.Locker.ReadRecord(ctx, lastKey(job))
}
