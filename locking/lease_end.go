package locking

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// How a lease ends: Release, MarkDone, MarkDoneLog, and End, which ends a
// claim with its job lease and record in one step.

// Release stops the watchdog and deletes the key (and a claim) where it
// still holds this lease's value. It runs on ctx without its cancellation,
// bounded by a timeout of its own, so a job's canceled context is fine to
// pass. It returns ErrLockLost when the key was no longer this lease's on
// a majority.
func (ls *Lease) Release(ctx context.Context) error {
	return ls.end(ctx, ending{})
}

// MarkDone stops the watchdog and, in one atomic step per store, replaces
// this lease's value by a done marker that lives for ttl and carries note;
// where the key has vanished (expired, or a store restarted empty) the
// marker is set too, and so it is over an abandoned claim this lease took
// over, never over another holder's value; MarkDone reports ErrLockLost if
// the lease was no longer this one's on a majority. Acquire and Claim on
// the key then fail with a *HeldError whose Done is true until the marker
// expires. Cancellation as for Release.
func (ls *Lease) MarkDone(ctx context.Context, ttl time.Duration, note string) error {
	if ttl <= 0 {
		return ls.end(ctx, ending{})
	}
	return ls.end(ctx, ending{done: doneValue(ls.lk.opt.Replica, note, ls.ID()), doneTTL: ttl})
}

// MarkDoneLog is MarkDone of a claim that also adds entry to its family's
// log (Locker.ReadLog), in the same step on each store, where the done
// marker is set; the log keeps its newest keep entries (by score). A
// retried MarkDoneLog adds the entry once.
func (ls *Lease) MarkDoneLog(ctx context.Context, ttl time.Duration, note string, entry LogEntry, keep int) error {
	if ttl <= 0 || !ls.spec.claim || keep <= 0 {
		return ls.MarkDone(ctx, ttl, note)
	}
	return ls.end(ctx, ending{done: doneValue(ls.lk.opt.Replica, note, ls.ID()), doneTTL: ttl, entry: &entry, keep: keep})
}

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
	// DoneTTL > 0 leaves a done marker that lives DoneTTL and carries Note,
	// as MarkDone does.
	DoneTTL time.Duration
	Note    string
	// Entry, with DoneTTL > 0 and Keep > 0, is added to a claim's family
	// log with its done marker, as MarkDoneLog does.
	Entry *LogEntry
	Keep  int
	// Also, when set, is released too, as its Release would.
	Also *Lease
	// Record, when its Name is set, is raised to at least RecordValue, as
	// Locker.AdvanceRecord would.
	Record      Key
	RecordValue int64
}

// EndResult is the outcome of Lease.End: Err the lease's (as Release or
// MarkDone would report it), Also Ending.Also's, Record the record's (nil
// when not asked).
type EndResult struct {
	Err, Also, Record error
}

// End ends the lease as e says. Where the lease is a claim, Also a lease
// of the same family taken with Acquire from the same Locker (a job's
// lease beside its slot's claim) and Record a record of that family, all
// of it is one step on each store: one call per store, where separate
// calls would take up to three. Otherwise each part is done by its own
// call, Also first. A later End (or Release) retries what did not settle;
// a record raised twice stays raised.
func (ls *Lease) End(ctx context.Context, e Ending) EndResult {
	in := ending{}
	if e.DoneTTL > 0 {
		in.done, in.doneTTL = doneValue(ls.lk.opt.Replica, e.Note, ls.ID()), e.DoneTTL
		if e.Entry != nil && e.Keep > 0 && ls.spec.claim {
			in.entry, in.keep = e.Entry, e.Keep
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
		res.Also = e.Also.Release(ctx)
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
