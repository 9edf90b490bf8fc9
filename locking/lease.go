package locking

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Lease is one successful acquisition of a Key. It is valid until
// ValidUntil on the locker's clock; Extend or the watchdog started by Keep
// move that point forward. A Lease is safe for concurrent use.
//
// A Lease guarantees that, while it is valid and the lock stores keep their
// data, no other Lease on the same key is valid. It does not guarantee that
// its holder notices in time when it stops being valid (a paused process
// notices only when it runs again): that is what the fencing Token is for.
//
// Call Release or MarkDone when the work is over. After the first call
// returns, no goroutine of the lease runs. When it failed to reach a
// majority (a *QuorumError), a later Release or MarkDone tries the stores
// again; once one succeeded, or found the key no longer this lease's,
// later calls do nothing and return nil.
type Lease struct {
	lk        *locker
	spec      leaseSpec
	token     uint64
	abandoned *Abandoned
	orphan    *Abandoned
	pause     Pause
	leftover  bool
	joined    *Lease // ClaimWith: the lease taken in the same step
	// trace is set only with tracing on (trace.go): a pointer, so that a
	// lease is no larger without.
	trace *leaseTrace

	mu         sync.Mutex
	validUntil time.Time
	watching   bool
	ended      bool // the owner ended the lease: the watchdog is stopped
	cancels    []context.CancelCauseFunc

	endMu   sync.Mutex // serialises Release and MarkDone
	settled bool       // the stores accepted the release (or the key was no longer ours)

	lost     chan struct{}
	lostOnce sync.Once
	// stopped ends when the owner releases the lease; it stops the
	// watchdog and aborts a renewal in flight.
	stopped context.Context
	stop    context.CancelFunc
	wg      sync.WaitGroup
}

func newLease(lk *locker, spec leaseSpec, g grant, validUntil time.Time) *Lease {
	stopped, stop := context.WithCancel(context.Background())
	return &Lease{
		lk: lk, spec: spec, token: g.token, abandoned: g.abandoned, orphan: g.orphan, pause: g.pause, leftover: g.leftover,
		validUntil: validUntil,
		lost:       make(chan struct{}),
		stopped:    stopped,
		stop:       stop,
	}
}

// Key is the key this lease holds.
func (ls *Lease) Key() Key { return ls.spec.key }

// Token is the fencing token: greater than the token of every lease
// acquired before this one in the same family, and different from every
// other lease's in the family, as long as a majority of the lock stores
// kept its data. Hand it to whatever the work writes to, so a stale
// holder's writes can be refused.
func (ls *Lease) Token() uint64 { return ls.token }

// ID is a short random identifier of this lease (16 hex characters),
// stored in the lock's value: a claim taken over after its holder died
// names it (Abandoned.ID).
func (ls *Lease) ID() string { return leaseID(ls.spec.value) }

// Abandoned is non-nil when Claim took over a claim whose holder never
// ended it (see Locker.Claim): the work it stands for must not be done
// again.
func (ls *Lease) Abandoned() *Abandoned { return ls.abandoned }

// Leftover reports that this Claim took over, on a minority of the stores,
// another claim of its key (one a store kept after missing its end, or one
// a late request left): the lease holds the key, but the claim is not this
// lease's on a majority, so the work must not be done under it. End it
// with MarkDone to clear the leftover, or Release it.
func (ls *Lease) Leftover() bool { return ls.leftover }

// Joined is the lease that ClaimWith took together with this claim, with
// the same token; nil when it was not taken (see ClaimWith).
func (ls *Lease) Joined() *Lease { return ls.joined }

// Orphan is non-nil when, during this Claim, a store held another claim of
// the same family whose lease had expired: work abandoned by its holder.
// Claim its key to take it over and report it (Lease.Abandoned).
func (ls *Lease) Orphan() *Abandoned { return ls.orphan }

// Pause is the newest pause state of a claim's family that the stores
// held when it was claimed — not active then (Claim refuses while a pause
// is active), but it may have covered the work's due time (Pause.Covers).
func (ls *Lease) Pause() Pause { return ls.pause }

// Holder is the replica name stored in the lock's value.
func (ls *Lease) Holder() string { return ls.lk.opt.Replica }

// TTL is the length the lease is renewed to.
func (ls *Lease) TTL() time.Duration { return ls.spec.ttl }

// ValidUntil is the instant, on the locker's clock, after which the lease
// must be taken as lost unless renewed.
func (ls *Lease) ValidUntil() time.Time {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.validUntil
}

// Lost is closed when the watchdog could not renew the lease on a majority
// before it expired, or found that another holder has the key.
func (ls *Lease) Lost() <-chan struct{} { return ls.lost }

// Extend renews the lease to its full TTL on a majority. It returns
// ErrLockLost when the key no longer holds this lease's value on a
// majority, a *QuorumError when a majority could not be reached, and
// ctx.Err() when ctx ends first. A failed Extend leaves ValidUntil as it
// was.
func (ls *Lease) Extend(ctx context.Context) (err error) {
	if ls.lk.tracer != nil {
		var sp trace.Span
		ctx, sp = ls.lk.startSpan(ctx, SpanExtend, ls.spec.key, ls.trace.parent(&ls.mu))
		defer func() { endSpan(sp, err, AttrFencingToken.Int64(int64(ls.token))) }()
	}
	start := ls.lk.opt.Clock.Now()
	ls.mu.Lock()
	if ls.ended {
		ls.mu.Unlock()
		return errLeaseEnded
	}
	if !start.Before(ls.validUntil) {
		ls.mu.Unlock()
		return ErrLockLost
	}
	ls.mu.Unlock()
	if err := ctxOr(ctx, ls.lk.b.extend(ctx, ls.spec)); err != nil {
		return err
	}
	ls.mu.Lock()
	if v := start.Add(ls.spec.ttl - drift(ls.spec.ttl)); v.After(ls.validUntil) {
		ls.validUntil = v
	}
	ls.mu.Unlock()
	return nil
}

// Keep starts the watchdog, once, and returns a context derived from ctx
// that is canceled with cause ErrLockLost when the lease is lost:
//
//	errors.Is(context.Cause(kctx), locking.ErrLockLost)
//
// The watchdog renews the lease every TTL/3, and sooner when less than
// that is left of its validity (a lease kept late after its acquisition),
// so a renewal is always tried before the lease expires. When a renewal
// fails it tries again until ValidUntil; then the lease is lost. A process
// that was paused past ValidUntil takes the lease as lost as soon as it
// runs again, without asking the stores. Keep may be called more than
// once; each context is canceled when the lease is lost or ended.
func (ls *Lease) Keep(ctx context.Context) context.Context {
	kctx, cancel := context.WithCancelCause(ctx)
	ls.mu.Lock()
	defer ls.mu.Unlock()
	select {
	case <-ls.lost:
		cancel(ErrLockLost)
		return kctx
	default:
	}
	if ls.ended {
		cancel(errLeaseEnded)
		return kctx
	}
	ls.cancels = append(ls.cancels, cancel)
	if ls.trace != nil && !ls.trace.keep.IsValid() {
		ls.trace.keep = trace.SpanContextFromContext(ctx)
	}
	if !ls.watching {
		ls.watching = true
		ls.wg.Add(1)
		go ls.watch()
	}
	return kctx
}

// retryEvery is how soon the watchdog tries again after a failed renewal.
func (ls *Lease) retryEvery() time.Duration {
	return max(ls.spec.ttl/10, 10*time.Millisecond)
}

// nextTry is the wait before the watchdog's next renewal: at most every,
// and at most half of what is left of the validity, so that a renewal is
// tried before the lease expires; 0 when it has expired.
func (ls *Lease) nextTry(every time.Duration) time.Duration {
	left := ls.ValidUntil().Sub(ls.lk.opt.Clock.Now())
	if left <= 0 {
		return 0
	}
	return max(min(every, left/2), time.Millisecond)
}

func (ls *Lease) watch() {
	defer ls.wg.Done()
	clock := ls.lk.opt.Clock
	interval := ls.spec.ttl / 3
	// The process may have been paused between Acquire and this goroutine
	// arming its timer (a run starting just before a freeze): then the
	// first tick would come only TTL/3 after waking, and the run would go on
	// that long on a lease that is gone. Check now, and never sleep past
	// half the validity left.
	wait := ls.nextTry(interval)
	if wait == 0 {
		ls.markLost()
		return
	}
	timer := clock.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-ls.stopped.Done():
			return
		case <-timer.C():
		}
		now := clock.Now()
		validUntil := ls.ValidUntil()
		if !now.Before(validUntil) {
			// Paused past validity, or renewals failed until now.
			ls.markLost()
			return
		}
		ctx, cancel := context.WithTimeout(ls.stopped, validUntil.Sub(now))
		err := ls.Extend(ctx)
		cancel()
		switch {
		case ls.stopped.Err() != nil:
			return
		case errors.Is(err, ErrLockLost):
			ls.markLost()
			return
		case err == nil:
			wait = ls.nextTry(interval)
		default:
			wait = ls.nextTry(ls.retryEvery())
		}
		if wait == 0 {
			ls.markLost()
			return
		}
		timer.Reset(wait)
	}
}

func (ls *Lease) markLost() {
	ls.lostOnce.Do(func() {
		close(ls.lost)
		ls.mu.Lock()
		cancels := ls.cancels
		ls.cancels = nil
		ls.mu.Unlock()
		for _, c := range cancels {
			c(ErrLockLost)
		}
	})
}

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
	if e.Record.Name != "" {
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
