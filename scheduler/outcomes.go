package scheduler

import (
	"context"
	"errors"
	"github.com/slotlock/slotlock/scheduler/history"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// outcomes is the component every slot's outcome is written through and
// read back from: it ends leases with what comes with the end (done
// marker, history entry, the job's "last handled slot" record), keeps
// that record per job (jobState), and reads the slot history
// (outcomes_history.go). An end the stores did not take for want of a
// majority goes to the outage, which ends it again once they answer.
type outcomes struct {
	*engine
	stores endRetrier
	// ending holds one token per lease end in flight (MaxInFlight/2):
	// ending a run's leases never waits behind the next second's
	// acquisitions (engine.inflight).
	ending chan struct{}
}

// endRetrier keeps an end that the stores did not take and ends it again
// once a majority answers (outage.go).
type endRetrier interface {
	retryEnd(p pendingEnd)
}

func newOutcomes(e *engine, stores endRetrier) *outcomes {
	return &outcomes{engine: e, stores: stores, ending: make(chan struct{}, max(1, e.cfg.MaxInFlight/2))}
}

// endLease ends a lease: a done marker living doneTTL with note, or a plain
// release when doneTTL is 0. A failure other than a lost lease is retried
// when the stores answer again.
func (o *outcomes) endLease(job, slot string, l *locking.Lease, doneTTL time.Duration, note string) {
	o.endLeaseThen(pendingEnd{job: job, slot: slot, lease: l, doneTTL: doneTTL, note: note})
}

// endLeaseThen ends p.lease as endLease does and calls p.then once the
// stores accepted it (now or after a retry), never when the lease was lost.
func (o *outcomes) endLeaseThen(p pendingEnd) {
	if err := o.tryEnd(&p); err != nil {
		o.endLeaseFailed(p, err)
	}
}

// tryEnd ends p.lease once and calls p.then if the stores accepted it; on
// an error p is left as a retry ends it (the slot's lease alone).
func (o *outcomes) tryEnd(p *pendingEnd) error {
	// The slot's end, the job lease's release and the job's record in one
	// call per store where they are given (locking.Lease.End); a plain
	// release or done marker otherwise.
	o.ending <- struct{}{}
	e := locking.Ending{DoneTTL: p.doneTTL, Note: p.note, Also: p.jobLease}
	if p.doneTTL > 0 && p.entry != nil && o.cfg.HistoryKeep > 0 {
		e.Entry, e.Keep = p.entry, o.cfg.HistoryKeep
	}
	var rec, prevAt time.Time
	var recOK bool
	if p.record != nil {
		if rec, prevAt, recOK = o.takeRecord(p.record); recOK {
			e.Record, e.RecordValue = history.LastKey(p.job), rec.Unix()
		}
	}
	res := p.lease.End(context.Background(), e)
	if recOK {
		o.recordWritten(p.record, rec, prevAt, res.Record)
	}
	if p.jobLease != nil && res.Also != nil {
		// Reported, and ended again alone when the stores answer.
		defer o.endLeaseFailed(pendingEnd{job: p.job, slot: p.slot, lease: p.jobLease}, res.Also)
	}
	p.jobLease, p.record = nil, nil // a retry ends the slot's lease alone
	<-o.ending
	if res.Err == nil && p.then != nil {
		p.then()
	}
	return res.Err
}

// endLeaseFailed logs why p's lease could not be ended and, unless it was
// lost, ends it again once the stores answer.
func (o *outcomes) endLeaseFailed(p pendingEnd, err error) {
	if errors.Is(err, locking.ErrLockLost) {
		// Expired or taken over; already reported as lock.lost if a run
		// depended on it.
		o.log.Debug("lease was no longer held when ended", "event", evLockReleaseFailed,
			"job", p.job, "slot", p.slot, "key", p.lease.Grant().Key.Name, "error", err.Error())
		return
	}
	o.log.Warn("could not end lease; retrying when the lock stores answer, else it expires after its ttl",
		"event", evLockReleaseFailed, "job", p.job, "slot", p.slot, "key", p.lease.Grant().Key.Name, "error", err.Error())
	o.stores.retryEnd(p)
}
