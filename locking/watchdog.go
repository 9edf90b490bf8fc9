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
	now := ls.lk.opt.Clock.Now() // not under ls.mu: a fake clock may block
	ls.mu.Lock()
	select {
	case <-ls.lost:
		ls.mu.Unlock()
		cancel(ErrLockLost)
		return kctx
	default:
	}
	if ls.ended {
		ls.mu.Unlock()
		cancel(errLeaseEnded)
		return kctx
	}
	ls.cancels = append(ls.cancels, cancel)
	if ls.trace != nil && !ls.trace.keep.IsValid() {
		ls.trace.keep = trace.SpanContextFromContext(ctx)
	}
	arm := !ls.watching
	var first time.Duration
	if arm {
		ls.watching = true
		// The process may have been paused between the grant and now (a
		// run starting just before a freeze): never wait past half the
		// validity left, and take a lease already expired as lost.
		first = nextTry(ls.firstEveryLocked(ls.spec.TTL/3), ls.validUntil.Sub(now))
	}
	ls.mu.Unlock()
	switch {
	case !arm:
	case first == 0:
		ls.markLost()
	default:
		ls.lk.keeper.add(ls, now.Add(first))
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
	first := !lost && ls.spec.Claim && !ls.started
	watching := ls.watching
	if first {
		ls.started = true
	}
	ls.mu.Unlock()
	if lost {
		ls.markLost() // as the watchdog does as soon as it runs
		return ErrLockLost
	}
	if first && watching {
		ls.renewSoon()
	}
	return nil
}

// renewSoon has the watchdog renew (and so confirm the start) within
// confirmAfter: sooner in the keeper while it waits to start, else a
// kick to the running watchdog.
func (ls *Lease) renewSoon() {
	now := ls.lk.opt.Clock.Now()
	if ls.lk.keeper.sooner(ls, now.Add(nextTry(ls.firstEvery(ls.spec.TTL/3), ls.ValidUntil().Sub(now)))) {
		return
	}
	ls.mu.Lock()
	kick := ls.kick
	ls.mu.Unlock()
	// nil: the watchdog is starting, and renews (so confirms) first.
	if kick != nil {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
}

// firstEvery is the watchdog's wait before a renewal while the start of
// the work is not yet confirmed: sooner once Start was called.
func (ls *Lease) firstEvery(interval time.Duration) time.Duration {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.firstEveryLocked(interval)
}

func (ls *Lease) firstEveryLocked(interval time.Duration) time.Duration {
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
	return nextTry(every, ls.ValidUntil().Sub(ls.lk.opt.Clock.Now()))
}

func nextTry(every, left time.Duration) time.Duration {
	if left <= 0 {
		return 0
	}
	return max(min(every, left/2), time.Millisecond)
}

// watch is the lease's watchdog, started by the keeper when the first
// renewal is due: it renews at once, then every TTL/3 (sooner after Start,
// and at most half the validity left), until the lease ends or is lost.
func (ls *Lease) watch() {
	defer ls.wg.Done()
	kick := make(chan struct{}, 1)
	ls.mu.Lock()
	ls.kick = kick
	ls.mu.Unlock()
	interval := ls.spec.TTL / 3
	var timer Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		if ls.stopped.Err() != nil {
			return
		}
		wait := ls.renew(interval)
		if wait < 0 {
			return
		}
		if wait == 0 {
			ls.markLost()
			return
		}
		if timer == nil {
			timer = ls.lk.opt.Clock.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		if !ls.await(timer, kick, interval) {
			return
		}
	}
}

// renew tries one renewal and returns the wait before the next: 0 when
// the lease is lost (paused past validity, renewals failed until then, or
// the key is another's), -1 when the lease ended meanwhile.
func (ls *Lease) renew(interval time.Duration) time.Duration {
	now := ls.lk.opt.Clock.Now()
	validUntil := ls.ValidUntil()
	if !now.Before(validUntil) {
		return 0
	}
	ctx, cancel := context.WithTimeout(ls.stopped, validUntil.Sub(now))
	err := ls.Extend(ctx)
	cancel()
	switch {
	case ls.stopped.Err() != nil:
		return -1
	case errors.Is(err, ErrLockLost):
		return 0
	case err == nil:
		return ls.nextTry(interval)
	default:
		return ls.nextTry(ls.retryEvery())
	}
}

// await waits for timer, or for a kick (Start: renew, and so confirm,
// soon); false when the lease ended.
func (ls *Lease) await(timer Timer, kick <-chan struct{}, interval time.Duration) bool {
	for {
		select {
		case <-ls.stopped.Done():
			return false
		case <-kick:
			if !timer.Stop() {
				select {
				case <-timer.C():
				default:
				}
			}
			timer.Reset(ls.nextTry(ls.firstEvery(interval)))
		case <-timer.C():
			return true
		}
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
