package scheduler

import (
	"context"
	"github.com/slotlock/slotlock/scheduler/history"
	"time"
)

// The job's record <job>/last: the latest slot this replica handled,
// written with a slot's end or alone, never after every slot (recordDue).

// recordHandled notes that slot t of j was handled (run, or skipped for
// overlap or late) and advances the job's record <job>/last to it when
// recordDue says so.
func (o *outcomes) recordHandled(j *job, t time.Time) {
	if o.recordDue(j, t) {
		o.flushRecord(j)
	}
}

// endHandled ends p.lease, the end of slot t of j, as endLeaseThen does,
// and advances the job's record in the same call when recordDue says so.
func (o *outcomes) endHandled(p pendingEnd, j *job, t time.Time) {
	if o.recordDue(j, t) {
		p.record = j
	}
	o.endLeaseThen(p)
}

// recordDue notes that slot t of j was handled and reports whether the
// job's record should be written now — not after every slot: the record
// matters only once a slot's done marker may have expired (doneTTL), so
// it is written when the next slot is doneTTL/4 away or more, when this
// replica's last write is doneTTL/4 old, and at shutdown. It thus lags the
// latest handled slot by less than doneTTL/2, well before that slot's
// marker can expire (recover relies on this). The gap to the next slot is
// taken between their due times (jitter), when they are handled.
func (o *outcomes) recordDue(j *job, t time.Time) bool {
	now := o.clock.Now()
	next := j.spec.Schedule.Next(t)
	j.mu.Lock()
	defer j.mu.Unlock()
	if t.After(j.recPending) {
		j.recPending = t
	}
	return o.isStopping() || next.IsZero() || j.spec.Due(next).Sub(j.spec.Due(t)) >= o.doneTTL/4 ||
		now.Sub(j.recWrittenAt) >= o.doneTTL/4
}

// flushRecord writes the job's pending record, if newer than the last write.
func (o *outcomes) flushRecord(j *job) {
	v, prevAt, ok := o.takeRecord(j)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	o.inflight <- struct{}{}
	err := o.cfg.Locker.AdvanceRecord(ctx, history.LastKey(j.name()), v.Unix())
	<-o.inflight
	o.recordWritten(j, v, prevAt, err)
}

// takeRecord returns the job's pending record when it is newer than the
// last write, and notes a write as started (others racing here see a
// fresh write); prevAt is for recordWritten.
func (o *outcomes) takeRecord(j *job) (v, prevAt time.Time, ok bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	v = j.recPending
	if !v.After(j.recWritten) {
		return v, prevAt, false
	}
	prevAt = j.recWrittenAt
	j.recWrittenAt = o.clock.Now()
	return v, prevAt, true
}

// recordWritten records the outcome of writing v (takeRecord).
func (o *outcomes) recordWritten(j *job, v, prevAt time.Time, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if err != nil {
		j.recWrittenAt = prevAt // try again at the next handled slot
		o.log.Warn("could not advance the job's last-slot record", "event", evLockReleaseFailed,
			"job", j.name(), "slot", slotString(v), "error", err.Error())
		return
	}
	if v.After(j.recWritten) {
		j.recWritten = v
	}
}

func (o *outcomes) readRecord(job string) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	o.inflight <- struct{}{}
	defer func() { <-o.inflight }()
	return o.cfg.Locker.ReadRecord(ctx, history.LastKey(job))
}
