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
	var err error
	s.ending <- struct{}{}
	switch {
	case p.jobLease != nil:
		// The slot's end and the job lease's release in one call per store.
		var entry *locking.LogEntry
		if p.doneTTL > 0 && p.history != nil && s.cfg.HistoryKeep > 0 {
			e := p.history.logEntry(p.at)
			entry = &e
		}
		var jobErr error
		err, jobErr = p.lease.MarkDoneWith(context.Background(), p.jobLease, p.doneTTL, p.note, entry, s.cfg.HistoryKeep)
		if jobErr != nil {
			// Reported, and ended again alone when the stores answer.
			defer s.endLeaseFailed(pendingEnd{job: p.job, slot: p.slot, lease: p.jobLease}, jobErr)
		}
		p.jobLease = nil
	case p.doneTTL > 0 && p.history != nil && s.cfg.HistoryKeep > 0:
		err = p.lease.MarkDoneLog(context.Background(), p.doneTTL, p.note, p.history.logEntry(p.at), s.cfg.HistoryKeep)
	case p.doneTTL > 0:
		err = p.lease.MarkDone(context.Background(), p.doneTTL, p.note)
	default:
		err = p.lease.Release(context.Background())
	}
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
			"job", p.job, "slot", p.slot, "key", p.lease.Key().Name, "error", err.Error())
		return
	}
	s.log.Warn("could not end lease; retrying when the lock stores answer, else it expires after its ttl",
		"event", evLockReleaseFailed, "job", p.job, "slot", p.slot, "key", p.lease.Key().Name, "error", err.Error())
	s.retryEnd(p)
}

// recordHandled notes that slot t of j was handled (run, or skipped for
// overlap or late) and advances the job's record <job>/last to it — not
// after every slot: the record matters only once a slot's done marker may
// have expired (doneTTL), so it is written when the next slot is doneTTL/4
// away or more, when this replica's last write is doneTTL/4 old, and at
// shutdown. It thus lags the latest handled slot by less than doneTTL/2,
// well before that slot's marker can expire (recover relies on this). The
// gap to the next slot is taken between their due times (jitter), when
// they are handled.
func (s *Scheduler) recordHandled(j *job, t time.Time) {
	now := s.clock.Now()
	next := j.spec.Schedule.Next(t)
	j.mu.Lock()
	if t.After(j.recPending) {
		j.recPending = t
	}
	write := s.isStopping() || next.IsZero() || j.spec.Due(next).Sub(j.spec.Due(t)) >= s.doneTTL/4 ||
		now.Sub(j.recWrittenAt) >= s.doneTTL/4
	j.mu.Unlock()
	if write {
		s.flushRecord(j)
	}
}

// flushRecord writes the job's pending record, if newer than the last write.
func (s *Scheduler) flushRecord(j *job) {
	j.mu.Lock()
	v := j.recPending
	if !v.After(j.recWritten) {
		j.mu.Unlock()
		return
	}
	prevAt := j.recWrittenAt
	j.recWrittenAt = s.clock.Now() // others racing here see a fresh write
	j.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	s.inflight <- struct{}{}
	err := s.cfg.Locker.AdvanceRecord(ctx, lastKey(j.name()), v.Unix())
	<-s.inflight
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
