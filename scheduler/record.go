package scheduler

import (
	"context"
	"errors"
	"time"

	"github.com/slotlock/slotlock/locking"
)

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
	if p.doneTTL > 0 && p.history != nil && s.cfg.HistoryKeep > 0 {
		entry := p.history.LogEntry(p.at)
		e.Entry, e.Keep = &entry, s.cfg.HistoryKeep
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
// and advances the job's record when recordDue says so, in the same call.
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
