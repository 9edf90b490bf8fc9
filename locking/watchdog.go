package locking

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// A lease's watchdog: Keep renews it while the work runs, Start declares
// the work begun, and the renewals confirm that on the stores.

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
