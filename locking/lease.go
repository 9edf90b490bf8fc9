package locking

import (
	"context"
	"errors"
	"sync"
	"time"

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
// Call End when the work is over. After the first End returns, no
// goroutine of the lease runs. When it failed to reach a majority (a
// *QuorumError), a later End tries the stores again; once one succeeded,
// or found the key no longer this lease's, later calls do nothing and
// return nil.
type Lease struct {
	lk    *locker
	spec  leaseSpec
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

func newLease(lk *locker, spec leaseSpec, g grant, validUntil time.Time) *Lease {
	stopped, stop := context.WithCancel(context.Background())
	return &Lease{
		lk: lk, spec: spec, token: g.token,
		grant: Grant{
			Key: spec.key, ID: leaseID(spec.value), Holder: lk.opt.Replica, TTL: spec.ttl,
			Abandoned: g.abandoned, Leftover: g.leftover, Orphan: g.orphan, Pause: g.pause,
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

// Grant describes a lease as it was granted: the key, the lease's
// identity, and, for a claim (Locker.Claim), what the claim found beside
// the key — its side outcomes, which the caller must act on before it
// does the work (see the package documentation, "Claims").
type Grant struct {
	// Key is the key the lease holds.
	Key Key
	// ID is a short random identifier of the lease (16 hex characters),
	// stored in the lock's value: a claim taken over after its holder died
	// names it (Abandoned.ID).
	ID string
	// Holder is the replica name stored in the lock's value
	// (Options.Replica).
	Holder string
	// TTL is the length the lease is renewed to.
	TTL time.Duration

	// Abandoned is non-nil when Claim took over a claim whose holder never
	// ended it (see Locker.Claim): the work it stands for must not be done
	// again.
	Abandoned *Abandoned
	// Leftover reports that the Claim took over, on a minority of the
	// stores, another claim of its key (one a store kept after missing its
	// end, or one a late request left): the lease holds the key, but the
	// claim is not the lease's on a majority, so the work must not be done
	// under it. End it with a done marker (Ending.DoneTTL) to clear the
	// leftover, or release it.
	Leftover bool
	// Orphan is non-nil when, during the Claim, a store held another claim
	// of the same family whose lease had expired: work abandoned by its
	// holder. Claim its key to take it over and report it (Abandoned).
	Orphan *Abandoned
	// Pause is the newest pause state of the claim's family that the
	// stores held when it was claimed — not active then (Claim refuses
	// while a pause is active), but it may have covered the work's due
	// time (Pause.Covers).
	Pause Pause
	// Joined is the lease taken together with the claim (With), with the
	// same token; nil when it was not taken.
	Joined *Lease
}

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
	started := ls.started
	ls.mu.Unlock()
	if err := ctxOr(ctx, ls.lk.b.extend(ctx, ls.spec, started)); err != nil {
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
	if !lost && ls.spec.claim {
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

func (ls *Lease) watch(kick <-chan struct{}) {
	defer ls.wg.Done()
	clock := ls.lk.opt.Clock
	interval := ls.spec.ttl / 3
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
