package locking

import (
	"context"
	"errors"
	"time"

	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/internal/wire"
	"go.opentelemetry.io/otel/trace"
)

// How a lease ends: End, with a done marker, a log entry, the claim's job
// lease and a record in one step where it can.

// end ends the lease alone, as e says (End's parts that are not one step).
func (ls *Lease) end(ctx context.Context, e driver.End) (err error) {
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
	err = ls.lk.b.Release(rctx, ls.spec, e).Err
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
		ls.lk.keeper.drop(ls)
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
func (ls *Lease) End(ctx context.Context, e Ending) Released {
	in := driver.End{}
	if e.DoneTTL > 0 {
		in.Done, in.DoneTTL = wire.DoneValue(ls.lk.opt.Replica, e.Note, ls.grant.ID), e.DoneTTL
		if e.Entry != nil && e.Keep > 0 && ls.spec.Claim {
			in.Entry, in.Keep, in.Taken = e.Entry, e.Keep, ls.grant.Abandoned != nil
		}
	}
	record := e.Record.Name != "" && e.RecordValue != 0
	joint := ls.spec.Claim && (e.Also == nil || ls.joins(e.Also)) &&
		(!record || (e.Record.Family == ls.spec.Key.Family && driver.CheckRecord(e.Record, e.RecordValue) == nil))
	if joint {
		if res, ok := ls.endJoint(ctx, in, e, record); ok {
			return res
		}
	}
	var res Released
	if e.Also != nil {
		res.Also = e.Also.end(ctx, driver.End{})
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
	return other.lk == ls.lk && !other.spec.Claim && other.spec.Key.Family == ls.spec.Key.Family && other != ls
}

// endJoint is End in one step; ok is false, and nothing was done, when ls
// was already settled (End then does the rest by separate calls).
func (ls *Lease) endJoint(ctx context.Context, in driver.End, e Ending, record bool) (res Released, ok bool) {
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
			_, osp = also.startEndSpan(ctx, driver.End{})
		}
		ctx, sp = ls.startEndSpan(ctx, in)
		defer func() {
			if osp != nil {
				endSpan(osp, res.Also, also.endAttrs(driver.End{})...)
			}
			endSpan(sp, res.Err, ls.endAttrs(in)...)
		}()
	}
	// The other lease first: the job's next run may start at once.
	if also != nil {
		also.halt()
		in.Also = &also.spec
	}
	ls.halt()
	if record {
		in.Record, in.RecordValue = e.Record, e.RecordValue
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	r := ls.lk.b.Release(rctx, ls.spec, in)
	ls.settle(r.Err)
	res.Err, res.Record = r.Err, r.Record
	if also != nil {
		also.settle(r.Also)
		res.Also = r.Also
	}
	return res, true
}
