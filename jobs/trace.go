package jobs

import (
	"context"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Trace context. When slotlock exports traces, the ctx a Job gets carries
// the run's span (slotlock.run): a Go plugin's own spans started from ctx
// are its children, and trace.SpanContextFromContext(ctx) tells its trace
// id. The exec plugin hands it to its program as TRACEPARENT (and
// TRACESTATE when there is one), the http plugin sends it as the
// traceparent (and tracestate) header, both in the W3C Trace Context
// format:
//
//	TRACEPARENT=00-<32 hex trace id>-<16 hex span id: the run's>-<2 hex flags>
//
// Without tracing ctx carries no span, and neither is set: a TRACEPARENT
// in params.env, or a traceparent in params.headers, is then passed as
// configured (with tracing, the run's wins).

// w3c is the W3C Trace Context propagator (traceparent, tracestate).
var w3c propagation.TraceContext

// TraceEnv returns the TRACEPARENT and TRACESTATE variables ("NAME=value")
// for the span in ctx, or nil when ctx carries no valid span.
func TraceEnv(ctx context.Context) []string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	c := propagation.MapCarrier{}
	w3c.Inject(ctx, c)
	var env []string
	for _, k := range w3c.Fields() { // traceparent, tracestate: in this order
		if v := c.Get(k); v != "" {
			env = append(env, strings.ToUpper(k)+"="+v)
		}
	}
	return env
}

// InjectTrace sets the traceparent (and tracestate) header of h for the
// span in ctx; it does nothing when ctx carries no valid span.
func InjectTrace(ctx context.Context, h http.Header) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	w3c.Inject(ctx, propagation.HeaderCarrier(h))
}
