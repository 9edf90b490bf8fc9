package scheduler

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/slotlock/slotlock/scheduler/history"
)

// Tracing (Config.TracerProvider). Each attempt of this replica at a
// slot is a span, slotlock.slot (a manual run's: slotlock.trigger), the
// root of its own trace; the lock layer's calls made for it (Claim of the
// slot, Acquire of the job lease, MarkDone or Release at the end) are its
// children, and so is the run, slotlock.run, when this replica won. The
// run's span is in the context the plugin gets (jobs.Run), so that the
// exec and http plugins pass it on (TRACEPARENT, traceparent) and a Go
// plugin's own spans are its children; the watchdog's renewals of the
// run's leases (locking.Extend) are its children too.
//
// Without a provider nothing is started: the slot path pays a nil check
// per step and allocates nothing more (the slotSpan and runSpan methods
// are no-ops on nil).

// TracerName is the instrumentation scope of the scheduler's spans.
const TracerName = "github.com/slotlock/slotlock/scheduler"

// Span names.
const (
	SpanSlot    = "slotlock.slot"    // one replica's attempt at a slot
	SpanTrigger = "slotlock.trigger" // a manual run's attempt (Trigger)
	SpanRun     = "slotlock.run"     // a run: all its attempts, retries and backoffs
)

// Span attributes. Outcome is a run's outcome (succeeded, failed,
// canceled), or, for an attempt that ran nothing, skipped (with the skip
// reason) or abandoned (the attempt took over a dead run's claim and
// closed it).
const (
	AttrJob          = attribute.Key("slotlock.job")
	AttrSlot         = attribute.Key("slotlock.slot") // RFC 3339 UTC, or "manual"
	AttrReplica      = attribute.Key("slotlock.replica")
	AttrFencingToken = attribute.Key("slotlock.fencing_token")
	AttrRunID        = attribute.Key("slotlock.run_id")
	AttrOutcome      = attribute.Key("slotlock.outcome")
	AttrReason       = attribute.Key("slotlock.reason")  // skipped: the skip reason; canceled: the cancel reason
	AttrAttempt      = attribute.Key("slotlock.attempt") // attempts made (SLOTLOCK_ATTEMPT of the last)
	AttrRecovered    = attribute.Key("slotlock.recovered")
	AttrErrorClass   = attribute.Key("slotlock.error_class")
)

// Span events of slotlock.run.
const (
	EventAttemptFailed = "attempt.failed" // a failed attempt that is retried: attempt, error, backoff_ms
)

// tracerOf returns tp's tracer for the scheduler, or nil (tracing off)
// when tp is nil or a no-op provider.
func tracerOf(tp trace.TracerProvider) trace.Tracer {
	switch tp.(type) {
	case nil, noop.TracerProvider, *noop.TracerProvider:
		return nil
	}
	return tp.Tracer(TracerName)
}

// slotSpan is an attempt's span (nil when tracing is off) and what it
// ended with.
type slotSpan struct {
	sp      trace.Span
	outcome history.Outcome
	reason  history.Reason
	ranRun  bool
	run     history.Entry // when ranRun (a copy: taking h's address would move it to the heap on the untraced path too)
}

// traceSlot starts the span of this replica's attempt at the slot of job
// for origin o: a new root (slotlock.slot), or for a manual run
// slotlock.trigger under caller's span, if any (the returned context
// carries caller's values, not its cancellation); a backfill has none.
// It returns the context for the attempt's lock calls (never canceled)
// and the span, or nil and nil when tracing is off.
func (ap *attempts) traceSlot(caller context.Context, job, slot string, o origin) (context.Context, *slotSpan) {
	if ap.tracer == nil || o == originBackfill {
		return nil, nil
	}
	attrs := []attribute.KeyValue{AttrJob.String(job), AttrSlot.String(slot), AttrReplica.String(ap.cfg.Replica)}
	if o == originManual {
		ctx, sp := ap.tracer.Start(context.WithoutCancel(caller), SpanTrigger, trace.WithAttributes(attrs...))
		return ctx, &slotSpan{sp: sp}
	}
	if o == originRecovered {
		attrs = append(attrs, AttrRecovered.Bool(true))
	}
	ctx, sp := ap.tracer.Start(context.Background(), SpanSlot, trace.WithNewRoot(), trace.WithAttributes(attrs...))
	return ctx, &slotSpan{sp: sp}
}

// skip records that the attempt ran nothing, for reason.
func (st *slotSpan) skip(reason history.Reason) {
	if st != nil {
		st.outcome, st.reason = history.OutcomeSkipped, reason
	}
}

// settled records that the attempt closed an abandoned claim.
func (st *slotSpan) settled() {
	if st != nil {
		st.outcome = history.OutcomeAbandoned
	}
}

// ran records the run the attempt made.
func (st *slotSpan) ran(h history.Entry) {
	if st != nil {
		st.ranRun, st.run, st.outcome, st.reason = true, h, h.Outcome, h.Reason
	}
}

// end ends the attempt's span. Failed runs, and skips that the log shows
// as warnings (the slot may have been lost), set the error status.
func (st *slotSpan) end() {
	if st == nil {
		return
	}
	var attrs []attribute.KeyValue
	if st.outcome != "" {
		attrs = append(attrs, AttrOutcome.String(string(st.outcome)))
	}
	if st.reason != "" {
		attrs = append(attrs, AttrReason.String(string(st.reason)))
	}
	if h := st.run; st.ranRun {
		attrs = append(attrs, AttrRunID.String(h.RunID), AttrFencingToken.Int64(int64(h.Token)), AttrAttempt.Int(h.Attempts))
	}
	st.sp.SetAttributes(attrs...)
	switch {
	case st.outcome == history.OutcomeFailed:
		st.sp.SetStatus(codes.Error, "run failed")
	case st.outcome == history.OutcomeSkipped && warnSkip(st.reason):
		st.sp.SetStatus(codes.Error, "skipped: "+string(st.reason))
	}
	st.sp.End()
}

// warnSkip reports the skip reasons that slot.skipped logs as warnings.
func warnSkip(reason history.Reason) bool {
	switch reason {
	case history.ReasonLate, history.ReasonNoQuorum, history.ReasonSlowLock, history.ReasonShutdown, history.ReasonClaimed:
		return true
	}
	return false
}

// runSpan is a run's span (nil when tracing is off).
type runSpan struct{ sp trace.Span }

// traceRun starts the span of the run of job's slot for origin o under
// the span of attempt (the attempt's), else of ctx, and returns ctx (the
// run's parent: its cancellation) carrying it. With tracing off it
// returns ctx and nil.
func (ap *attempts) traceRun(ctx, attempt context.Context, job, slot string, o origin, runID string, token uint64) (context.Context, *runSpan) {
	if ap.tracer == nil {
		return ctx, nil
	}
	if attempt != nil {
		ctx = trace.ContextWithSpan(ctx, trace.SpanFromContext(attempt))
	}
	attrs := []attribute.KeyValue{AttrJob.String(job), AttrSlot.String(slot), AttrReplica.String(ap.cfg.Replica),
		AttrRunID.String(runID), AttrFencingToken.Int64(int64(token))}
	if o == originRecovered {
		attrs = append(attrs, AttrRecovered.Bool(true))
	}
	ctx, sp := ap.tracer.Start(ctx, SpanRun, trace.WithAttributes(attrs...))
	return ctx, &runSpan{sp: sp}
}

// retry records failed attempt n, retried after wait.
func (rs *runSpan) retry(n int, err error, wait time.Duration) {
	if rs == nil {
		return
	}
	rs.sp.AddEvent(EventAttemptFailed, trace.WithAttributes(AttrAttempt.Int(n),
		AttrErrorClass.String(errorClass(err)), attribute.Int64("backoff_ms", wait.Milliseconds())))
}

// end ends the run's span with its outcome. A failed run, and one
// canceled for its timeout or a lost lease, set the error status.
func (rs *runSpan) end(h history.Entry, runErr error) {
	if rs == nil {
		return
	}
	attrs := []attribute.KeyValue{AttrOutcome.String(string(h.Outcome)), AttrAttempt.Int(h.Attempts)}
	if h.Reason != "" {
		attrs = append(attrs, AttrReason.String(string(h.Reason)))
	}
	if h.ErrorClass != "" {
		attrs = append(attrs, AttrErrorClass.String(h.ErrorClass))
	}
	rs.sp.SetAttributes(attrs...)
	switch {
	case h.Outcome == history.OutcomeFailed && runErr != nil:
		rs.sp.SetStatus(codes.Error, "run failed: "+h.ErrorClass) // the class, never the text: it may hold what a job printed
	case h.Outcome == history.OutcomeCanceled && h.Reason != history.ReasonShutdown:
		rs.sp.SetStatus(codes.Error, "canceled: "+string(h.Reason))
	}
	rs.sp.End()
}
