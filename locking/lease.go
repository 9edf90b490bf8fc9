package locking

import (
	"context"
	"sync"
	"time"

	"github.com/slotlock/slotlock/locking/driver"
	"go.opentelemetry.io/otel/trace"
)

// A lease's life: granted (Locker.Claim or Acquire, locker.go), what it
// holds (this file), started and kept (Start, Keep: watchdog.go), ended
// (End: end.go). The driver (driver.Driver) does each step's store calls.

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
	kick       chan struct{} // Start tells a running watchdog to renew soon (made by it)
	ended      bool          // the owner ended the lease: the watchdog is stopped
	cancels    []context.CancelCauseFunc

	endMu   sync.Mutex // serialises the ends (End)
	settled bool       // the stores accepted the release (or the key was no longer ours)

	// keepEntry is the lease's place in the keeper while its watchdog
	// waits to start; keepDone: it will not wait there again (started,
	// or the lease ended). Both guarded by the keeper's mutex.
	keepEntry *keepEntry
	keepDone  bool

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
// majority, a *QuorumError when a majority could not be reached,
// ErrUnfit without a call while Options.Fit refuses, and ctx.Err() when
// ctx ends first. A failed Extend leaves ValidUntil as it was.
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
	if err := ls.lk.fit(); err != nil {
		return err
	}
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
