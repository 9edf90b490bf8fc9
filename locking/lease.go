package locking

import (
	"context"
	"errors"
	"github.com/slotlock/slotlock/locking/driver"
	"sync"
	"time"

	"github.com/slotlock/slotlock/locking/internal/wire"
	"go.opentelemetry.io/otel/trace"
)

// A lease's life, in this file: granted (Locker.Claim or Acquire,
// locker.go), started (Start: its work began), kept (Keep: the watchdog
// renews it, Extend), ended (End). The driver (driver.Driver) does each
// step's store calls.

// Lease is one successful acquisition of a Key. It is valid until
// ValidUntil on the locker's clock; Extend or the watchdog started by Keep
// move that point forward. A Lease is safe for concurrent use.
//
// A Lease guarantees that, while it is valid and the lock stores keep their
// data, no other Lease on the same key is valid. It does not guarantee that
// its holder notices in time when it stops being valid (a paused process
// notices only when it runs again): that is what the fencing Token is for.
//
// Call End when the work is over. After the first End returns, no
// goroutine of the lease runs. When it failed to reach a majority (a
// *QuorumError), a later End tries the stores again; once one succeeded,
// or found the key no longer this lease's, later calls do nothing and
// return nil.
type Lease struct {
	lk    *locker
	spec  driver.Lease
	token uint64
	grant Grant
	// trace is set only with tracing on (trace.go): a pointer, so that a
	// lease is no larger without.
	trace *leaseTrace

	mu         sync.Mutex
	validUntil time.Time
	watching   bool
	started    bool          // Start was called: renewals confirm the claim started
	kick       chan struct{} // Start tells the watchdog to renew soon (made with it)
	ended      bool          // the owner ended the lease: the watchdog is stopped
	cancels    []context.CancelCauseFunc

	endMu   sync.Mutex // serialises the ends (End)
	settled bool       // the stores accepted the release (or the key was no longer ours)

	lost     chan struct{}
	lostOnce sync.Once
	// stopped ends when the owner releases the lease; it stops the
	// watchdog and aborts a renewal in flight.
	stopped context.Context
	stop    context.CancelFunc
	wg      sync.WaitGroup
}

func newLease(lk *locker, spec driver.Lease, g driver.Grant, validUntil time.Time) *Lease {
	stopped, stop := context.WithCancel(context.Background())
	return &Lease{
		lk: lk, spec: spec, token: g.Token,
		grant: Grant{
			Key: spec.Key, ID: driver.LeaseID(spec.Value), Holder: lk.opt.Replica, TTL: spec.TTL,
			Abandoned: g.Abandoned, Leftover: g.Leftover, Orphan: g.Orphan, Pause: g.Pause,
		},
		validUntil: validUntil,
		lost:       make(chan struct{}),
		stopped:    stopped,
		stop:       stop,
	}
}

// Token is the fencing token: greater than the token of every lease
// acquired before this one in the same family, and different from every
// other lease's in the family, as long as a majority of the lock stores
// kept its data. Hand it to whatever the work writes to, so a stale
// holder's writes can be refused.
func (ls *Lease) Token() uint64 { return ls.token }

// Grant is what the acquisition granted and found; it does not change
// over the lease's life.
func (ls *Lease) Grant() Grant { return ls.grant }

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
		ctx, sp = ls.lk.startSpan(ctx, SpanExtend, ls.spec.Key, ls.trace.parent(&ls.mu))
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
	started := ls.started
	ls.mu.Unlock()
	if err := ctxOr(ctx, ls.lk.b.Extend(ctx, ls.spec, started)); err != nil {
		return err
	}
	ls.mu.Lock()
	if v := start.Add(ls.spec.TTL - drift(ls.spec.TTL)); v.After(ls.validUntil) {
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
		ls.kick = make(chan struct{}, 1)
		ls.wg.Add(1)
		go ls.watch(ls.kick)
	}
	return kctx
}

// confirmAfter bounds the wait between Start and the first renewal, which
// confirms on the stores that the claim's work began: a run that dies
// later than that is reported abandoned (it started), one that dies
// sooner is reported as one that may have started. A run shorter than
// that is confirmed by its end, which writes its outcome: no call is
// added to a short run.
const confirmAfter = time.Second

// Start declares that the work a claim stands for has begun (call it just
// before the work starts). It makes no call itself: from then on the
// watchdog's renewals (Keep) confirm on the stores that the claim
// started, the first within min(TTL/3, 1s). A claim whose holder dies
// after that is taken over with Abandoned.Started set; one whose holder
// dies before has Started false: the work may or may not have begun.
//
// Start returns ErrLockLost, and declares nothing, when the lease is lost
// or its validity has passed on the locker's clock — a process paused
// between the grant and the work, whose key another holder may have taken
// over and reported by now: the work must not start. Call it on every
// lease the work holds (on a plain lease it only checks this).
func (ls *Lease) Start() error {
	ls.mu.Lock()
	lost := !ls.lk.opt.Clock.Now().Before(ls.validUntil)
	select {
	case <-ls.lost:
		lost = true
	default:
	}
	if !lost && ls.spec.Claim {
		if !ls.started && ls.kick != nil {
			select {
			case ls.kick <- struct{}{}:
			default:
			}
		}
		ls.started = true
	}
	ls.mu.Unlock()
	if lost {
		ls.markLost() // as the watchdog does as soon as it runs
		return ErrLockLost
	}
	return nil
}

// firstEvery is the watchdog's wait before a renewal while the start of
// the work is not yet confirmed: sooner once Start was called.
func (ls *Lease) firstEvery(interval time.Duration) time.Duration {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.started {
		return min(interval, confirmAfter)
	}
	return interval
}

// retryEvery is how soon the watchdog tries again after a failed renewal.
func (ls *Lease) retryEvery() time.Duration {
	return max(ls.spec.TTL/10, 10*time.Millisecond)
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

func (ls *Lease) watch(kick <-chan struct{}) {
	defer ls.wg.Done()
	clock := ls.lk.opt.Clock
	interval := ls.spec.TTL / 3
	// The process may have been paused between Acquire and this goroutine
	// arming its timer (a run starting just before a freeze): then the
	// first tick would come only TTL/3 after waking, and the run would go on
	// that long on a lease that is gone. Check now, and never sleep past
	// half the validity left.
	wait := ls.nextTry(ls.firstEvery(interval))
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
		case <-kick:
			// Started: renew (and so confirm) soon.
			if !timer.Stop() {
				select {
				case <-timer.C():
				default:
				}
			}
			timer.Reset(ls.nextTry(ls.firstEvery(interval)))
			continue
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
