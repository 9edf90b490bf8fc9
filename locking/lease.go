package locking

import (
	"context"
	"errors"
	"sync"
	"time"
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
	l     *locker
	key   Key
	value string
	token uint64
	ttl   time.Duration

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

func newLease(l *locker, key Key, value string, token uint64, ttl time.Duration, validUntil time.Time) *Lease {
	stopped, stop := context.WithCancel(context.Background())
	return &Lease{
		l: l, key: key, value: value, token: token, ttl: ttl,
		validUntil: validUntil,
		lost:       make(chan struct{}),
		stopped:    stopped,
		stop:       stop,
	}
}

// Key is the key this lease holds.
func (s *Lease) Key() Key { return s.key }

// Token is the fencing token: greater than the token of every lease
// acquired before this one in the same family, as long as a majority of the
// lock stores kept its data. Hand it to whatever the work writes to, so a
// stale holder's writes can be refused.
func (s *Lease) Token() uint64 { return s.token }

// Holder is the replica name stored in the lock's value.
func (s *Lease) Holder() string { return s.l.opt.Replica }

// TTL is the length the lease is renewed to.
func (s *Lease) TTL() time.Duration { return s.ttl }

// ValidUntil is the instant, on the locker's clock, after which the lease
// must be taken as lost unless renewed.
func (s *Lease) ValidUntil() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.validUntil
}

// Lost is closed when the watchdog could not renew the lease on a majority
// before it expired, or found that another holder has the key.
func (s *Lease) Lost() <-chan struct{} { return s.lost }

// Extend renews the lease to its full TTL on a majority. It returns
// ErrLockLost when the key no longer holds this lease's value on a
// majority, a *QuorumError when a majority could not be reached, and
// ctx.Err() when ctx ends first. A failed Extend leaves ValidUntil as it
// was.
func (s *Lease) Extend(ctx context.Context) error {
	start := s.l.opt.Clock.Now()
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return errLeaseEnded
	}
	if !start.Before(s.validUntil) {
		s.mu.Unlock()
		return ErrLockLost
	}
	s.mu.Unlock()
	if err := ctxOr(ctx, s.l.b.extend(ctx, s.key, s.value, s.ttl)); err != nil {
		return err
	}
	s.mu.Lock()
	if v := start.Add(s.ttl - Drift(s.ttl)); v.After(s.validUntil) {
		s.validUntil = v
	}
	s.mu.Unlock()
	return nil
}

// Keep starts the watchdog, once, and returns a context derived from ctx
// that is canceled with cause ErrLockLost when the lease is lost:
//
//	errors.Is(context.Cause(kctx), locking.ErrLockLost)
//
// The watchdog renews the lease every TTL/3. When a renewal fails it tries
// again until ValidUntil; then the lease is lost. A process that was
// paused past ValidUntil takes the lease as lost as soon as it runs again,
// without asking the stores. Keep may be called more than once; each
// context is canceled when the lease is lost or ended.
func (s *Lease) Keep(ctx context.Context) context.Context {
	kctx, cancel := context.WithCancelCause(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.lost:
		cancel(ErrLockLost)
		return kctx
	default:
	}
	if s.ended {
		cancel(errLeaseEnded)
		return kctx
	}
	s.cancels = append(s.cancels, cancel)
	if !s.watching {
		s.watching = true
		s.wg.Add(1)
		go s.watch()
	}
	return kctx
}

// retryEvery is how soon the watchdog tries again after a failed renewal.
func (s *Lease) retryEvery() time.Duration {
	d := s.ttl / 10
	return max(d, 10*time.Millisecond)
}

func (s *Lease) watch() {
	defer s.wg.Done()
	clock := s.l.opt.Clock
	interval := s.ttl / 3
	// The process may have been paused between Acquire and this goroutine
	// arming its timer (a run starting just before a freeze): then the
	// first tick would come only TTL/3 after waking, and the run would go on
	// that long on a lease that is gone. Check now, and never sleep past
	// ValidUntil.
	now := clock.Now()
	validUntil := s.ValidUntil()
	if !now.Before(validUntil) {
		s.markLost()
		return
	}
	timer := clock.NewTimer(min(interval, validUntil.Sub(now)))
	defer timer.Stop()
	for {
		select {
		case <-s.stopped.Done():
			return
		case <-timer.C():
		}
		now := clock.Now()
		validUntil := s.ValidUntil()
		if !now.Before(validUntil) {
			// Paused past validity, or renewals failed until now.
			s.markLost()
			return
		}
		ctx, cancel := context.WithTimeout(s.stopped, validUntil.Sub(now))
		err := s.Extend(ctx)
		cancel()
		switch {
		case s.stopped.Err() != nil:
			return
		case err == nil:
			timer.Reset(interval)
		case errors.Is(err, ErrLockLost):
			s.markLost()
			return
		default:
			next := s.ValidUntil().Sub(clock.Now())
			if next <= 0 {
				s.markLost()
				return
			}
			timer.Reset(min(s.retryEvery(), next))
		}
	}
}

func (s *Lease) markLost() {
	s.lostOnce.Do(func() {
		close(s.lost)
		s.mu.Lock()
		cancels := s.cancels
		s.cancels = nil
		s.mu.Unlock()
		for _, c := range cancels {
			c(ErrLockLost)
		}
	})
}

// Release stops the watchdog and deletes the key where it still holds this
// lease's value. It runs on ctx without its cancellation, bounded by a
// timeout of its own, so a job's canceled context is fine to pass. It
// returns ErrLockLost when the key was no longer this lease's on a majority.
func (s *Lease) Release(ctx context.Context) error {
	return s.end(ctx, "", 0)
}

// MarkDone stops the watchdog and, in one atomic step per store, replaces
// this lease's value by a done marker that lives for ttl and carries note;
// where the key has vanished (expired, or a store restarted empty) the
// marker is set too, never over another holder's value, and MarkDone then
// reports ErrLockLost if that was so on a majority. Acquire on the key
// then fails with a *HeldError whose Done is true until the marker
// expires. Cancellation as for Release.
func (s *Lease) MarkDone(ctx context.Context, ttl time.Duration, note string) error {
	if ttl <= 0 {
		return s.end(ctx, "", 0)
	}
	return s.end(ctx, doneValue(s.l.opt.Replica, note), ttl)
}

func (s *Lease) end(ctx context.Context, done string, doneTTL time.Duration) error {
	s.endMu.Lock()
	defer s.endMu.Unlock()
	if s.settled {
		return nil
	}
	s.mu.Lock()
	first := !s.ended
	s.ended = true
	cancels := s.cancels
	s.cancels = nil
	s.mu.Unlock()
	if first {
		s.stop()
		s.wg.Wait()
		for _, c := range cancels {
			c(errLeaseEnded)
		}
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	err := s.l.b.release(rctx, s.key, s.value, done, doneTTL)
	if err == nil || errors.Is(err, ErrLockLost) {
		s.settled = true
	}
	return err
}
