package jobs

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace"
)

// A run's span context as the scheduler hands it over when tracing is on.
var (
	testTraceID, _ = trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	testSpanID, _  = trace.SpanIDFromHex("00f067aa0ba902b7")
)

const testTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func tracedCtx(t *testing.T, state string) context.Context {
	t.Helper()
	ts, err := trace.ParseTraceState(state)
	require.NoError(t, err)
	return trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: testTraceID, SpanID: testSpanID, TraceFlags: trace.FlagsSampled, TraceState: ts,
	}))
}

func TestTraceEnv(t *testing.T) {
	require.Nil(t, TraceEnv(context.Background()), "no span: no variable")
	require.Equal(t, []string{"TRACEPARENT=" + testTraceparent}, TraceEnv(tracedCtx(t, "")))
	require.Equal(t, []string{"TRACEPARENT=" + testTraceparent, "TRACESTATE=vendor=abc"}, TraceEnv(tracedCtx(t, "vendor=abc")))
}

// With a span in the run's context the exec job's program gets
// TRACEPARENT and TRACESTATE, above a TRACEPARENT in params.env; without
// one, params.env's passes as configured and nothing else is added.
func TestExecPassesTraceparent(t *testing.T) {
	params := helperCommand("args")
	params["env"].(map[string]any)["TRACEPARENT"] = "00-from-params"
	params["show_env"] = []any{"TRACEPARENT"} // env values are hidden in the output unless shown
	job := mustJob(t, "exec", params)
	printed := func(ctx context.Context) map[string]string {
		run, logs := testRun(t)
		require.NoError(t, job.Run(ctx, run))
		var got struct{ Env map[string]string }
		require.NoError(t, json.Unmarshal([]byte(logs.Event(t, "exec.output")["stdout"].(string)), &got))
		return got.Env
	}
	env := printed(tracedCtx(t, "vendor=abc"))
	require.Equal(t, testTraceparent, env["TRACEPARENT"])
	require.Equal(t, "vendor=abc", env["TRACESTATE"])

	env = printed(context.Background())
	require.Equal(t, "00-from-params", env["TRACEPARENT"])
	require.NotContains(t, env, "TRACESTATE")
}

// With a span in the run's context the http job sends traceparent (and
// tracestate), and the log shows traceparent's value but hides
// tracestate's; without one it sends neither.
func TestHTTPSendsTraceparent(t *testing.T) {
	srv, rec := recordingServer(t, http.StatusNoContent, "")
	job := mustJob(t, "http", map[string]any{"url": srv.URL + "/hook"})

	run, logs := testRun(t)
	require.NoError(t, job.Run(tracedCtx(t, "vendor=abc"), run))
	rec.mu.Lock()
	require.Equal(t, testTraceparent, rec.header.Get("Traceparent"))
	require.Equal(t, "vendor=abc", rec.header.Get("Tracestate"))
	rec.mu.Unlock()
	headers := logs.Event(t, "http.response")["request_headers"].(map[string]any)
	require.Equal(t, testTraceparent, headers["Traceparent"])
	require.Equal(t, Redacted, headers["Tracestate"])

	run, _ = testRun(t)
	require.NoError(t, job.Run(context.Background(), run))
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Empty(t, rec.header.Values("Traceparent"))
	require.Empty(t, rec.header.Values("Tracestate"))
}
