package locking

import (
	"context"
	"errors"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/slotlock/slotlock/locking/driver"
)

// Tracing. With Options.TracerProvider set, each lock round a caller
// waits on is a span: Acquire and Claim, Extend (the watchdog's renewals
// too), and a lease's End (span Release, or MarkDone when it leaves a done
// marker). A span's parent is the span in the context
// passed to the call; a lease's later calls made without one take the
// span its Acquire was called under, and its renewals (the watchdog's)
// the span its first Keep was called under: a run's. Without a provider (the default)
// nothing is started, recorded or allocated: one nil check per call.

// TracerName is the instrumentation scope of the lock layer's spans.
const TracerName = "github.com/slotlock/slotlock/locking"

// Span names.
const (
	SpanAcquire  = "locking.Acquire"
	SpanClaim    = "locking.Claim"
	SpanExtend   = "locking.Extend"
	SpanRelease  = "locking.Release"
	SpanMarkDone = "locking.MarkDone"
)

// Span attributes.
const (
	AttrKey          = attribute.Key("locking.key")           // family:name
	AttrNodes        = attribute.Key("locking.nodes")         // lock stores asked (1 for Local)
	AttrQuorum       = attribute.Key("locking.quorum")        // answers needed
	AttrResult       = attribute.Key("locking.result")        // ok, held, done, ... (lockResult)
	AttrFencingToken = attribute.Key("locking.fencing_token") // the lease's token
	AttrLeaseID      = attribute.Key("locking.lease_id")      // Grant.ID (a slot's run id)
	AttrAbandoned    = attribute.Key("locking.abandoned")     // Claim took over an abandoned claim
	AttrLeftover     = attribute.Key("locking.leftover")      // Claim took over a leftover
	AttrDoneTTLMS    = attribute.Key("locking.done_ttl_ms")   // End with a done marker: its lifetime
)

// tracerOf returns tp's tracer for the lock layer, or nil (tracing off)
// when tp is nil or a no-op provider.
func tracerOf(tp trace.TracerProvider) trace.Tracer {
	switch tp.(type) {
	case nil, noop.TracerProvider, *noop.TracerProvider:
		return nil
	}
	return tp.Tracer(TracerName)
}

// lockResult names the outcome of a lock call for the locking.result
// attribute: ok, held, done, claimed, paused, split_vote, no_quorum,
// slow_acquire, lost, canceled, closed or error.
func lockResult(err error) string {
	var he *HeldError
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrPaused):
		return "paused"
	case errors.Is(err, ErrSplitVote):
		return "split_vote"
	case errors.As(err, &he) && he.Done:
		return "done"
	case errors.As(err, &he) && he.Claimed:
		return "claimed"
	case errors.Is(err, ErrNotAcquired):
		return "held"
	case errors.Is(err, ErrNoQuorum):
		return "no_quorum"
	case errors.Is(err, ErrSlowAcquire):
		return "slow_acquire"
	case errors.Is(err, ErrLockLost):
		return "lost"
	case errors.Is(err, ErrClosed):
		return "closed"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	}
	return "error"
}

// startSpan starts a lock call's span under ctx's span, or under parent
// when ctx carries none. Only called with a tracer.
func (l *locker) startSpan(ctx context.Context, name string, key Key, parent trace.SpanContext) (context.Context, trace.Span) {
	if parent.IsValid() && !trace.SpanContextFromContext(ctx).IsValid() {
		ctx = trace.ContextWithSpanContext(ctx, parent)
	}
	return l.tracer.Start(ctx, name, trace.WithAttributes(
		AttrKey.String(key.String()), AttrNodes.Int(l.nodes), AttrQuorum.Int(l.quorum)))
}

// endSpan records err and ends sp. A refusal (held, done, paused, a split
// vote) is an answer, not an error: only failures to reach the stores and
// lost leases set the error status.
func endSpan(sp trace.Span, err error, attrs ...attribute.KeyValue) {
	res := lockResult(err)
	sp.SetAttributes(append(attrs, AttrResult.String(res))...)
	switch res {
	case "ok", "held", "done", "claimed", "paused", "split_vote":
	default:
		sp.SetStatus(codes.Error, err.Error())
	}
	sp.End()
}

// endAcquireSpan ends the span of an Acquire or Claim with its lease's
// token and id.
func endAcquireSpan(sp trace.Span, ls *Lease, err error) {
	if ls == nil {
		endSpan(sp, err)
		return
	}
	attrs := []attribute.KeyValue{AttrFencingToken.Int64(int64(ls.token)), AttrLeaseID.String(ls.grant.ID)}
	if ls.grant.Abandoned != nil {
		attrs = append(attrs, AttrAbandoned.Bool(true))
	}
	if ls.grant.Leftover {
		attrs = append(attrs, AttrLeftover.Bool(true))
	}
	endSpan(sp, err, attrs...)
}

// leaseTrace is what a lease remembers for its own spans: the span its
// Acquire or Claim was called under (acq), and the one its first Keep was
// (keep, guarded by the lease's mu). They are the parents of the lease's
// calls made on a context without a span: Release and MarkDone go under
// acq (the lease's life is its acquirer's), renewals under keep (the work
// kept alive: a run), else acq.
type leaseTrace struct {
	acq, keep trace.SpanContext
}

// parent is the parent of a renewal's span; mu is the lease's.
func (t *leaseTrace) parent(mu *sync.Mutex) trace.SpanContext {
	mu.Lock()
	defer mu.Unlock()
	if t.keep.IsValid() {
		return t.keep
	}
	return t.acq
}

// startEndSpan starts the span of an end (trace.go).
func (ls *Lease) startEndSpan(ctx context.Context, e driver.End) (context.Context, trace.Span) {
	name := SpanRelease
	if e.DoneTTL > 0 {
		name = SpanMarkDone
	}
	return ls.lk.startSpan(ctx, name, ls.spec.Key, ls.trace.acq)
}

// endAttrs are the attributes of an end's span.
func (ls *Lease) endAttrs(e driver.End) []attribute.KeyValue {
	attrs := []attribute.KeyValue{AttrFencingToken.Int64(int64(ls.token))}
	if e.DoneTTL > 0 {
		attrs = append(attrs, AttrDoneTTLMS.Int64(e.DoneTTL.Milliseconds()))
	}
	return attrs
}
