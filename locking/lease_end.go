package locking

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// How a lease ends: End, with a done marker, a log entry, the claim's job
// lease and a record in one step where it can.

func (ls *Lease) end(ctx context.Context, e ending) (err error) {
	if ls.lk.tracer != nil {
		var sp trace.Span
		ctx, sp = ls.startEndSpan(ctx, e)
		defer func() { endSpan(sp, err, ls.endAttrs(e)...) }()
	}
	ls.endMu.Lock()
	defer ls.endMu.Unlock()
	if ls.settled {
		return nil
	}
	ls.halt()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	err = ls.lk.b.release(rctx, ls.spec, e).err
	ls.settle(err)
	return err
}

// halt marks the lease ended and, the first time, stops its watchdog and
// cancels the contexts it kept. ls.endMu is held.
func (ls *Lease) halt() {
	ls.mu.Lock()
	first := !ls.ended
	ls.ended = true
	cancels := ls.cancels
	ls.cancels = nil
	ls.mu.Unlock()
	if first {
		ls.stop()
		ls.wg.Wait()
		for _, c := range cancels {
			c(errLeaseEnded)
		}
	}
}

// settle records the outcome of a release: once the stores accepted it,
// or the key was no longer ours, later ends do nothing. ls.endMu is held.
func (ls *Lease) settle(err error) {
	if err == nil || errors.Is(err, ErrLockLost) {
		ls.settled = true
	}
}

// Ending says how Lease.End ends a lease. The zero value releases it.
type Ending struct {
	// DoneTTL > 0 leaves, in place of the lease's value, a done marker that
	// lives DoneTTL and carries Note: Acquire and Claim of the key then fail
	// with a *HeldError whose Done is true until it expires. The marker is
	// set where the key has vanished too (expired, or a store restarted
	// empty), and over an abandoned claim this lease took over, never over
	// another holder's value. A retried End sets it once.
	DoneTTL time.Duration
	Note    string
	// Entry, with DoneTTL > 0 and Keep > 0, is added to a claim's family
	// log (Store.ReadLog) where its done marker is set, in the same step
	// (so a run's own end that comes after another settled its claim
	// still leaves its outcome); the log keeps its newest Keep entries (by
	// score). A retried End adds it once. For a lease that took an
	// abandoned claim over (Grant.Abandoned), Entry is added only where
	// the lease is ours, and a retried End counts a store where it finds
	// Entry as one where its first attempt found the lease ours, even
	// after the marker expired: two such leases must not end with the
	// same Entry (name the lease in it).
	Entry *LogEntry
	Keep  int
	// Also, when set, is released too (a job's lease beside its slot's
	// claim).
	Also *Lease
	// Record, when its Name is set, is raised to at least RecordValue, as
	// Store.AdvanceRecord would.
	Record      Key
	RecordValue int64
}

// EndResult is the outcome of Lease.End: Err the lease's, Also
// Ending.Also's, Record the record's (nil when not asked). Err and Also
// are ErrLockLost when the key no longer held the lease's value on a
// majority, a *QuorumError when a majority could not be reached.
type EndResult struct {
	Err, Also, Record error
}

// End stops the watchdog and ends the lease as e says; the zero Ending
// deletes the key (and a claim) where it still holds this lease's value.
// After the first End returns, no goroutine of the lease runs. End runs
// on ctx without its cancellation, bounded by a timeout of its own, so a
// job's canceled context is fine to pass.
//
// Where the lease is a claim, Also a lease of the same family from the
// same Locker (a job's lease beside its slot's claim) and Record a record
// of that family, all of it is one step on each store: one call per
// store, where separate calls would take up to three. Otherwise each part
// is done by its own call, Also first. A later End retries what did not
// settle (a *QuorumError); once the stores accepted it, or found the key
// no longer this lease's, a later End does nothing and reports nil. A
// record raised twice stays raised.
func (ls *Lease) End(ctx context.Context, e Ending) EndResult {
	in := ending{}
	if e.DoneTTL > 0 {
		in.done, in.doneTTL = doneValue(ls.lk.opt.Replica, e.Note, ls.grant.ID), e.DoneTTL
		if e.Entry != nil && e.Keep > 0 && ls.spec.claim {
			in.entry, in.keep, in.taken = e.Entry, e.Keep, ls.grant.Abandoned != nil
		}
	}
	record := e.Record.Name != "" && e.RecordValue != 0
	joint := ls.spec.claim && (e.Also == nil || ls.joins(e.Also)) &&
		(!record || (e.Record.Family == ls.spec.key.Family && checkRecord(e.Record, e.RecordValue) == nil))
	if joint {
		if res, ok := ls.endJoint(ctx, in, e, record); ok {
			return res
		}
	}
	var res EndResult
	if e.Also != nil {
		res.Also = e.Also.end(ctx, ending{})
	}
	res.Err = ls.end(ctx, in)
	if record {
		res.Record = ls.lk.AdvanceRecord(ctx, e.Record, e.RecordValue)
	}
	return res
}

// joins reports whether other can be ended in ls's step: a plain lease of
// ls's family from the same locker.
func (ls *Lease) joins(other *Lease) bool {
	return other.lk == ls.lk && !other.spec.claim && other.spec.key.Family == ls.spec.key.Family && other != ls
}

// endJoint is End in one step; ok is false, and nothing was done, when ls
// was already settled (End then does the rest by separate calls).
func (ls *Lease) endJoint(ctx context.Context, in ending, e Ending, record bool) (res EndResult, ok bool) {
	// Lock order: the claim, then the other lease (no method ends a claim
	// from its job lease).
	ls.endMu.Lock()
	defer ls.endMu.Unlock()
	if ls.settled {
		return res, false
	}
	also := e.Also
	if also != nil {
		also.endMu.Lock()
		defer also.endMu.Unlock()
		if also.settled {
			also = nil
		}
	}
	if ls.lk.tracer != nil {
		var sp, osp trace.Span
		if also != nil {
			_, osp = also.startEndSpan(ctx, ending{})
		}
		ctx, sp = ls.startEndSpan(ctx, in)
		defer func() {
			if osp != nil {
				endSpan(osp, res.Also, also.endAttrs(ending{})...)
			}
			endSpan(sp, res.Err, ls.endAttrs(in)...)
		}()
	}
	// The other lease first: the job's next run may start at once.
	if also != nil {
		also.halt()
		in.also = &also.spec
	}
	ls.halt()
	if record {
		in.record, in.recordN = e.Record, e.RecordValue
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	r := ls.lk.b.release(rctx, ls.spec, in)
	ls.settle(r.err)
	res.Err, res.Record = r.err, r.record
	if also != nil {
		also.settle(r.also)
		res.Also = r.also
	}
	return res, true
}

// startEndSpan starts the span of an end (trace.go).
func (ls *Lease) startEndSpan(ctx context.Context, e ending) (context.Context, trace.Span) {
	name := SpanRelease
	if e.doneTTL > 0 {
		name = SpanMarkDone
	}
	return ls.lk.startSpan(ctx, name, ls.spec.key, ls.trace.acq)
}

// endAttrs are the attributes of an end's span.
func (ls *Lease) endAttrs(e ending) []attribute.KeyValue {
	attrs := []attribute.KeyValue{AttrFencingToken.Int64(int64(ls.token))}
	if e.doneTTL > 0 {
		attrs = append(attrs, AttrDoneTTLMS.Int64(e.doneTTL.Milliseconds()))
	}
	return attrs
}
