package locking_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redistest"
	"github.com/slotlock/slotlock/locking/redlock"
)

// recordingProvider is an SDK TracerProvider that keeps every ended span.
func recordingProvider(t *testing.T) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, rec
}

func spanAttrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

func spansNamed(rec *tracetest.SpanRecorder, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// Each lock call is a span under the caller's span, with the key, the
// node count and quorum, the result and the token; a lease's renewal made
// without a span goes under the span Keep was called with, its end under
// the span it was claimed under. Against three real Redis nodes.
func TestLockSpans(t *testing.T) {
	nodes := redistest.Start(t, 3)
	tp, rec := recordingProvider(t)
	l, err := redlock.New(redlock.Config{Nodes: nodes.Addrs(), OpTimeout: time.Second},
		locking.Options{Replica: "r1", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), TracerProvider: tp})
	require.NoError(t, err)
	defer l.Close()

	tracer := tp.Tracer("test")
	attemptCtx, attempt := tracer.Start(context.Background(), "attempt")
	key := locking.Key{Family: "job", Name: "slot:1"}
	lease, err := l.Claim(attemptCtx, key, 10*time.Second)
	require.NoError(t, err)
	_, err = l.Claim(attemptCtx, key, 10*time.Second) // held by the first
	require.ErrorIs(t, err, locking.ErrNotAcquired)

	runCtx, run := tracer.Start(attemptCtx, "run")
	lease.Keep(runCtx)
	require.NoError(t, lease.Extend(context.Background()))
	run.End()
	require.NoError(t, lease.End(context.Background(), locking.Ending{DoneTTL: time.Minute, Note: "succeeded"}).Err)
	attempt.End()

	claims := spansNamed(rec, locking.SpanClaim)
	require.Len(t, claims, 2)
	for i, want := range []string{"ok", "held"} {
		s := claims[i]
		a := spanAttrs(s)
		require.Equal(t, attempt.SpanContext().SpanID(), s.Parent().SpanID(), "claim %d parent", i)
		require.Equal(t, "job:slot:1", a[locking.AttrKey].AsString())
		require.Equal(t, int64(3), a[locking.AttrNodes].AsInt64())
		require.Equal(t, int64(2), a[locking.AttrQuorum].AsInt64())
		require.Equal(t, want, a[locking.AttrResult].AsString())
		require.Equal(t, codes.Unset, s.Status().Code, "a refusal is an answer, not an error")
	}
	a := spanAttrs(claims[0])
	require.Equal(t, int64(lease.Token()), a[locking.AttrFencingToken].AsInt64())
	require.Equal(t, lease.Grant().ID, a[locking.AttrLeaseID].AsString())

	extends := spansNamed(rec, locking.SpanExtend)
	require.Len(t, extends, 1)
	require.Equal(t, run.SpanContext().SpanID(), extends[0].Parent().SpanID(), "a renewal goes under the kept work's span")
	require.Equal(t, "ok", spanAttrs(extends[0])[locking.AttrResult].AsString())

	done := spansNamed(rec, locking.SpanMarkDone)
	require.Len(t, done, 1)
	require.Equal(t, attempt.SpanContext().SpanID(), done[0].Parent().SpanID(), "the end goes under the claim's caller")
	require.Equal(t, int64(time.Minute/time.Millisecond), spanAttrs(done[0])[locking.AttrDoneTTLMS].AsInt64())
	require.Equal(t, attempt.SpanContext().TraceID(), done[0].SpanContext().TraceID())
}

// The watchdog's renewals are spans under the kept context's span; a
// release on a lease lost meanwhile is an error span. In-process locks:
// one node, quorum one.
func TestLockSpansWatchdogAndLoss(t *testing.T) {
	tp, rec := recordingProvider(t)
	l := locking.NewLocal(locking.Options{Replica: "r1", TracerProvider: tp})
	defer l.Close()
	ctx, run := tp.Tracer("test").Start(context.Background(), "run")
	lease, err := l.Acquire(context.Background(), locking.Key{Family: "job", Name: "run"}, 300*time.Millisecond)
	require.NoError(t, err)
	lease.Keep(ctx)
	require.Eventually(t, func() bool { return len(spansNamed(rec, locking.SpanExtend)) >= 2 }, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, lease.End(context.Background(), locking.Ending{}).Err)
	run.End()
	for _, s := range spansNamed(rec, locking.SpanExtend) {
		require.Equal(t, run.SpanContext().SpanID(), s.Parent().SpanID())
		a := spanAttrs(s)
		require.Equal(t, int64(1), a[locking.AttrNodes].AsInt64())
		require.Equal(t, int64(1), a[locking.AttrQuorum].AsInt64())
	}
	acq := spansNamed(rec, locking.SpanAcquire)
	require.Len(t, acq, 1)
	require.False(t, acq[0].Parent().IsValid(), "acquired without a span: a root span")

	// Taken over by another holder after expiry: the end reports it lost.
	lost, err := l.Acquire(context.Background(), locking.Key{Family: "job", Name: "other"}, 100*time.Millisecond)
	require.NoError(t, err)
	time.Sleep(150 * time.Millisecond)
	other, err := l.Acquire(context.Background(), locking.Key{Family: "job", Name: "other"}, time.Second)
	require.NoError(t, err)
	require.ErrorIs(t, lost.End(context.Background(), locking.Ending{}).Err, locking.ErrLockLost)
	require.NoError(t, other.End(context.Background(), locking.Ending{}).Err)
	var lostSpan sdktrace.ReadOnlySpan
	for _, s := range spansNamed(rec, locking.SpanRelease) {
		if spanAttrs(s)[locking.AttrFencingToken].AsInt64() == int64(lost.Token()) {
			lostSpan = s
		}
	}
	require.NotNil(t, lostSpan)
	require.Equal(t, "lost", spanAttrs(lostSpan)[locking.AttrResult].AsString())
	require.Equal(t, codes.Error, lostSpan.Status().Code)
}

// Without a provider, or with a no-op one, the lock layer adds no span
// to anything: a caller's context stays as it was, and a lease's calls
// allocate no more than without tracing.
func TestLockTracingOff(t *testing.T) {
	for i, tp := range []trace.TracerProvider{nil, noop.NewTracerProvider()} {
		l := locking.NewLocal(locking.Options{Replica: "r1", TracerProvider: tp})
		key := locking.Key{Family: "job", Name: "k" + strconv.Itoa(i)}
		allocs := testing.AllocsPerRun(100, func() {
			lease, err := l.Acquire(context.Background(), key, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if err := lease.End(context.Background(), locking.Ending{}).Err; err != nil && !errors.Is(err, locking.ErrLockLost) {
				t.Fatal(err)
			}
		})
		// localAcquireReleaseAllocs: the figure at the commit before
		// tracing existed (trace_allocs_*_test.go).
		require.LessOrEqual(t, allocs, float64(localAcquireReleaseAllocs), "provider %d", i)
		require.NoError(t, l.Close())
	}
}
