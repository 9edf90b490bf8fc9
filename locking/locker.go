package locking

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/slotlock/slotlock/locking/driver"
)

// Options are the settings both Locker implementations share. The zero
// value means the defaults: the host name, SystemClock(0), slog.Default().
type Options struct {
	// Replica names this process in lock values, so a loser can report who
	// holds a key.
	Replica string
	// Clock measures validity and drives the watchdog.
	Clock Clock
	// Logger receives the few lines the lock layer writes itself (node state
	// changes); it never receives secrets.
	Logger *slog.Logger
	// TracerProvider, when set, gets a span for each Acquire, Claim,
	// Extend and end of a lease (trace.go). Nil (the default) or a
	// no-op provider: no tracing, at no cost.
	TracerProvider trace.TracerProvider
	// Token, when set, draws the random part of every lease value (the
	// lease's id and its run's id derive from it) for key in place of
	// crypto/rand. Only a simulation sets it: one that derives tokens from
	// its seed replays them. Tokens must be unique and unguessable:
	// never set it in production.
	Token func(key Key) [16]byte
	// Fit, when set, says whether this process is fit to hold leases: it
	// is asked before every acquisition and every renewal. While it
	// returns an error no lease is taken (ErrUnfit, wrapping it) and none
	// is renewed, so the leases held lapse at their validity — their
	// kept contexts canceled with ErrLockLost — and other processes may
	// take them over, as from a frozen process. For a process that must
	// not hold work it cannot account for: the command's, while its log
	// output is blocked. Ending a lease is always allowed.
	Fit func() error
}

// WithDefaults is o with its zero fields set to their defaults: the
// host name as Replica, the system clock, slog's default logger. A
// driver's constructor takes its clock and logger from it.
func (o Options) WithDefaults() Options {
	if o.Replica == "" {
		o.Replica, _ = os.Hostname()
	}
	if o.Clock == nil {
		o.Clock = SystemClock(0)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// releaseTimeout bounds a Lease.End, which runs on a context
// detached from the (often already canceled) caller's context.
const releaseTimeout = 5 * time.Second

// drift is the allowance for clock drift between this process and the
// lock stores that Acquire and Extend subtract from a lease's TTL:
// ttl/100 + 2ms, as in the Redlock paper.
func drift(ttl time.Duration) time.Duration { return ttl/100 + 2*time.Millisecond }

// locker is the front end shared by Redlock and Local: it makes values,
// computes validity and hands out Leases; the driver does the storage.
type locker struct {
	b      driver.Driver
	opt    Options
	closed atomic.Bool

	tracer        trace.Tracer // nil: tracing off
	nodes, quorum int          // span attributes
	keeper        *keeper      // the leases whose watchdog waits to start (keeper.go)
}

func newLocker(b driver.Driver, opt Options) *locker {
	l := &locker{b: b, opt: opt.WithDefaults(), tracer: tracerOf(opt.TracerProvider)}
	l.keeper = newKeeper(l.opt.Clock)
	l.nodes, l.quorum = b.Size()
	return l
}

func (l *locker) Acquire(ctx context.Context, key Key, ttl time.Duration) (*Lease, error) {
	return l.acquire(ctx, driver.Lease{Key: key, TTL: ttl})
}

func (l *locker) Claim(ctx context.Context, key Key, ttl time.Duration, opts ...ClaimOption) (*Lease, error) {
	s := driver.Lease{Key: key, TTL: ttl, Claim: true}
	for _, o := range opts {
		if o.with == (Key{}) {
			continue
		}
		if s.Also != nil {
			return nil, fmt.Errorf("locking: claim %s: more than one With", key)
		}
		if err := driver.CheckKey(o.with); err != nil {
			return nil, err
		}
		if o.with.Family != key.Family || o.with == key {
			return nil, fmt.Errorf("locking: claim %s with %s: not another key of the same family", key, o.with)
		}
		s.Also = &driver.Lease{Key: o.with, TTL: ttl}
	}
	return l.acquire(ctx, s)
}

// ClaimOption is an option of Locker.Claim.
type ClaimOption struct {
	with Key
}

// With makes Claim take also, a plain lease of the claimed key's family
// (a job's lease beside its slot's claim), with the same ttl, in the same
// step on each store: one call per store where Claim then Acquire take
// two. The claim's outcome is Claim's. also is taken only with a claim of
// the caller's own (not one taken over, Grant.Abandoned, nor a leftover,
// Grant.Leftover) and only where it is free on a majority; then
// Grant.Joined is its lease, with the claim's fencing token (one
// acquisition, one token). Otherwise Joined is nil, also was left as it
// was, and the caller may Acquire it alone. End both with one Lease.End
// (Ending.Also). A zero Key adds nothing; at most one With per Claim.
func With(also Key) ClaimOption { return ClaimOption{with: also} }

func (l *locker) acquire(ctx context.Context, s driver.Lease) (ls *Lease, err error) {
	var parent trace.SpanContext
	if l.tracer != nil {
		parent = trace.SpanContextFromContext(ctx)
		name := SpanAcquire
		if s.Claim {
			name = SpanClaim
		}
		if s.Also != nil {
			// Once the claim is granted, the lease tried with it has its
			// Acquire span too (taken or held), when that is decided.
			actx := ctx
			defer func() {
				if ls == nil {
					return // never tried: the claim was refused
				}
				_, asp := l.startSpan(actx, SpanAcquire, s.Also.Key, trace.SpanContext{})
				var jerr error
				if ls.grant.Joined == nil {
					jerr = &HeldError{Key: s.Also.Key}
				}
				endAcquireSpan(asp, ls.grant.Joined, jerr)
			}()
		}
		var sp trace.Span
		ctx, sp = l.startSpan(ctx, name, s.Key, trace.SpanContext{})
		defer func() { endAcquireSpan(sp, ls, err) }()
	}
	if s.TTL <= drift(s.TTL) {
		return nil, fmt.Errorf("locking: acquire %s: ttl %v is too short", s.Key, s.TTL)
	}
	if err := driver.CheckKey(s.Key); err != nil {
		return nil, err
	}
	if l.closed.Load() {
		return nil, ErrClosed
	}
	if err := l.fit(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.Value = l.leaseValue(s.Key)
	if s.Also != nil {
		also := *s.Also
		also.Value = l.leaseValue(also.Key)
		s.Also = &also
	}
	start := l.opt.Clock.Now()
	g, err := l.b.Acquire(ctx, s)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, err
	}
	validUntil := start.Add(s.TTL - drift(s.TTL))
	if !l.opt.Clock.Now().Before(validUntil) {
		// The acquisition took longer than the lease lasts: nothing is held
		// any more that could be relied on. Undo and report.
		l.b.UndoAcquired(ctx, s)
		return nil, &slowAcquireError{key: s.Key}
	}
	ls = newLease(l, s, g, validUntil)
	if g.Joined {
		ls.grant.Joined = newLease(l, *s.Also, driver.Grant{Token: g.Token}, validUntil)
	}
	if l.tracer != nil {
		ls.trace = &leaseTrace{acq: parent}
		if ls.grant.Joined != nil {
			ls.grant.Joined.trace = &leaseTrace{acq: parent}
		}
	}
	return ls, nil
}

func (l *locker) Ping(ctx context.Context) ([]NodeStatus, error) {
	if l.closed.Load() {
		return nil, ErrClosed
	}
	st, err := l.b.Ping(ctx)
	return st, ctxOr(ctx, err)
}

func (l *locker) Mode() string { return l.b.Mode() }

func (l *locker) Close() error {
	if l.closed.Swap(true) {
		return nil
	}
	l.keeper.close()
	return l.b.Close()
}

// ctxOr returns ctx.Err() in place of err when ctx has ended, so callers
// see cancellation as cancellation and not as a generic failure.
func ctxOr(ctx context.Context, err error) error {
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
	}
	return err
}

// leaseValue is a new lease's value: its token, 128 random bits as 32
// hex characters, then "|" and the replica's name — built in one string.
func (l *locker) leaseValue(key Key) string {
	var b [16]byte
	if l.opt.Token != nil {
		b = l.opt.Token(key)
	} else if _, err := rand.Read(b[:]); err != nil {
		panic("locking: crypto/rand failed: " + err.Error()) // never happens on Linux
	}
	const digits = "0123456789abcdef"
	var v strings.Builder
	v.Grow(2*len(b) + 1 + len(l.opt.Replica))
	for _, x := range b {
		v.WriteByte(digits[x>>4])
		v.WriteByte(digits[x&15])
	}
	v.WriteByte('|')
	v.WriteString(l.opt.Replica)
	return v.String()
}

// Replica is the name this locker writes in lock values
// (Options.Replica, defaulted); a scheduler given the locker takes it as
// its own when none is set.
// fit is Options.Fit's verdict as ErrUnfit, nil when fit (or not asked).
func (l *locker) fit() error {
	if l.opt.Fit == nil {
		return nil
	}
	if err := l.opt.Fit(); err != nil {
		return fmt.Errorf("%w: %w", ErrUnfit, err)
	}
	return nil
}

func (l *locker) Replica() string { return l.opt.Replica }

// NewLocker returns the Locker over d: the front end (Lease, its
// watchdog, the Store's checks) over a driver, as database/sql's OpenDB
// over a driver.Connector. NewLocal uses it with the in-process driver,
// locking/redlock with the Redlock quorum.
func NewLocker(d driver.Driver, opt Options) Locker { return newLocker(d, opt) }
