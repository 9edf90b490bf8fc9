package scheduler

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/slotlock/slotlock/internal/secrettest"
	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// tracedEnv is env whose locker and schedulers record their spans.
type tracedEnv struct {
	*env
	tp  *sdktrace.TracerProvider
	rec *tracetest.SpanRecorder
}

func newTracedEnv(t *testing.T) *tracedEnv {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	e := newEnv(t)
	e.locker = locking.NewLocal(locking.Options{Replica: "local", TracerProvider: tp})
	return &tracedEnv{env: e, tp: tp, rec: rec}
}

func (e *tracedEnv) scheduler(replica string, specs ...JobSpec) *Scheduler {
	e.t.Helper()
	s, err := New(Config{
		Replica: replica, Locker: e.locker, Logger: e.sink.logger(replica), Metrics: e.metrics,
		LockTTL: 30 * time.Second, MaxClockSkew: 2 * time.Second, ShutdownGrace: 5 * time.Second,
		TracerProvider: e.tp, Jobs: specs, Secrets: []string{secrettest.RedisPass},
		// Every replica claims every slot, so that a slot has a loser's
		// attempt to trace (a later candidate reads first and, finding the
		// slot handled, makes none).
		Candidates: -1,
	})
	require.NoError(e.t, err)
	return s
}

// spans returns the ended spans named name whose attributes include kv.
func (e *tracedEnv) spans(name string, kv ...attribute.KeyValue) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
next:
	for _, s := range e.rec.Ended() {
		if s.Name() != name {
			continue
		}
		a := attrsOf(s)
		for _, want := range kv {
			if a[want.Key] != want.Value {
				continue next
			}
		}
		out = append(out, s)
	}
	return out
}

// children returns the names of the ended spans whose parent is p.
func (e *tracedEnv) children(p sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range e.rec.Ended() {
		if s.Parent().SpanID() == p.SpanContext().SpanID() && s.Parent().TraceID() == p.SpanContext().TraceID() {
			out = append(out, s.Name())
		}
	}
	return out
}

func attrsOf(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// Two replicas on one lock store: each slot gives two attempt spans, the
// winner's with its run (the span the plugin's ctx carries) and its lock
// calls as children, the loser's skipped with reason held or done.
func TestTraceSlotAttemptsAndRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newTracedEnv(t)
		var mu sync.Mutex
		seen := map[string]trace.SpanContext{} // run id -> the plugin's span
		job := funcJob(func(ctx context.Context, run jobs.Run) error {
			mu.Lock()
			seen[run.RunID] = trace.SpanContextFromContext(ctx)
			mu.Unlock()
			return nil
		})
		stop1 := running(t, e.scheduler("r1", everySecond(t, "tick", job)))
		stop2 := running(t, e.scheduler("r2", everySecond(t, "tick", job)))
		time.Sleep(3500 * time.Millisecond)
		stop1()
		stop2()

		require.Len(t, seen, 3, "slots 1..3")
		for runID, sc := range seen {
			runs := e.spans(SpanRun, AttrRunID.String(runID))
			require.Len(t, runs, 1, "run %s", runID)
			run := runs[0]
			require.True(t, sc.IsValid())
			require.Equal(t, run.SpanContext().TraceID(), sc.TraceID(), "the plugin's ctx carries the run's span")
			require.Equal(t, run.SpanContext().SpanID(), sc.SpanID())
			a := attrsOf(run)
			slot, replica := a[AttrSlot].AsString(), a[AttrReplica].AsString()
			require.Equal(t, "tick", a[AttrJob].AsString())
			require.Contains(t, []string{"r1", "r2"}, replica)
			require.Positive(t, a[AttrFencingToken].AsInt64())
			require.Equal(t, string(history.OutcomeSucceeded), a[AttrOutcome].AsString())
			require.Equal(t, int64(1), a[AttrAttempt].AsInt64())

			won := e.spans(SpanSlot, AttrSlot.String(slot), AttrReplica.String(replica))
			require.Len(t, won, 1)
			require.Equal(t, won[0].SpanContext().SpanID(), run.Parent().SpanID(), "the run is a child of the attempt")
			require.False(t, won[0].Parent().IsValid(), "an attempt is a root span")
			wa := attrsOf(won[0])
			require.Equal(t, string(history.OutcomeSucceeded), wa[AttrOutcome].AsString())
			require.Equal(t, runID, wa[AttrRunID].AsString())
			require.Equal(t, a[AttrFencingToken], wa[AttrFencingToken])
			require.ElementsMatch(t, []string{locking.SpanClaim, locking.SpanAcquire, SpanRun, locking.SpanMarkDone, locking.SpanRelease},
				e.children(won[0]), "claim of the slot, job lease, run, done marker, job lease's release")

			all := e.spans(SpanSlot, AttrSlot.String(slot))
			require.Len(t, all, 2, "one attempt per replica")
			for _, s := range all {
				if s.SpanContext().SpanID() == won[0].SpanContext().SpanID() {
					continue
				}
				la := attrsOf(s)
				require.Equal(t, string(history.OutcomeSkipped), la[AttrOutcome].AsString())
				require.Contains(t, []string{string(history.ReasonHeld), string(history.ReasonDone)}, la[AttrReason].AsString())
				require.Equal(t, codes.Unset, s.Status().Code, "losing a slot is no error")
				require.Equal(t, []string{locking.SpanClaim}, e.children(s))
			}
		}
	})
}

// A retried attempt is an event of the run's span; a failed run sets the
// error status on its span and its attempt's.
func TestTraceRetriesAndFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newTracedEnv(t)
		flaky := &recorder{now: time.Now}
		flaky.fail.Store(1)
		// The error quotes what a program printed: a URL with its
		// password, the Redis password.
		broken := funcJob(func(context.Context, jobs.Run) error {
			return errors.New("disk full at postgres://u:" + secrettest.OutputSecret + "@db/app; auth " + secrettest.RedisPass)
		})
		sched, _ := ParseSchedule("@every 1m", time.UTC)
		stop := running(t, e.scheduler("r1",
			JobSpec{Name: "flaky", Schedule: sched, Job: flaky, Retry: Retry{Max: 2, Backoff: time.Second}},
			JobSpec{Name: "broken", Schedule: sched, Job: broken}))
		time.Sleep(70 * time.Second)
		stop()

		runs := e.spans(SpanRun, AttrJob.String("flaky"))
		require.Len(t, runs, 1)
		a := attrsOf(runs[0])
		require.Equal(t, string(history.OutcomeSucceeded), a[AttrOutcome].AsString())
		require.Equal(t, int64(2), a[AttrAttempt].AsInt64())
		ev := runs[0].Events()
		require.Len(t, ev, 1)
		require.Equal(t, EventAttemptFailed, ev[0].Name)
		require.Contains(t, ev[0].Attributes, AttrAttempt.Int(1))
		require.Contains(t, ev[0].Attributes, AttrErrorClass.String("error"))
		require.Contains(t, ev[0].Attributes, attribute.Int64("backoff_ms", 1000))

		runs = e.spans(SpanRun, AttrJob.String("broken"))
		require.Len(t, runs, 1)
		require.Equal(t, string(history.OutcomeFailed), attrsOf(runs[0])[AttrOutcome].AsString())
		require.Equal(t, codes.Error, runs[0].Status().Code)
		// The span carries the error's class, never its text.
		secrettest.CaptureString(runs[0].Status().Description)
		require.Equal(t, "run failed: error", runs[0].Status().Description)
		for _, sp := range e.rec.Ended() {
			for _, ev := range sp.Events() {
				for _, a := range ev.Attributes {
					secrettest.CaptureString(a.Value.Emit())
				}
			}
			secrettest.CaptureString(sp.Status().Description)
		}
		failed := where(e.sink.events(t), evRunFailed, "job", "broken")
		require.Len(t, failed, 1)
		require.Equal(t, "disk full at postgres://***@db/app; auth ***", failed[0].str("error"), "the log's text is scrubbed")
		attempts := e.spans(SpanSlot, AttrJob.String("broken"))
		require.Len(t, attempts, 1)
		require.Equal(t, codes.Error, attempts[0].Status().Code)
	})
}

// A manual run's attempt is a slotlock.trigger span under the caller's
// span, with its lock calls and the run as children.
func TestTraceTrigger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newTracedEnv(t)
		var got trace.SpanContext
		job := funcJob(func(ctx context.Context, run jobs.Run) error {
			got = trace.SpanContextFromContext(ctx)
			return nil
		})
		s := e.scheduler("r1", everySecond(t, "tick", job))
		ctx, caller := e.tp.Tracer("test").Start(context.Background(), "caller")
		require.NoError(t, s.Trigger(ctx, "tick"))
		caller.End()

		trig := e.spans(SpanTrigger, AttrJob.String("tick"), AttrSlot.String(SlotManual), AttrOutcome.String(string(history.OutcomeSucceeded)))
		require.Len(t, trig, 1)
		require.Equal(t, caller.SpanContext().SpanID(), trig[0].Parent().SpanID())
		require.ElementsMatch(t, []string{locking.SpanAcquire, SpanRun, locking.SpanRelease}, e.children(trig[0]))
		run := e.spans(SpanRun)[0]
		require.Equal(t, run.SpanContext().SpanID(), got.SpanID())
		require.Equal(t, caller.SpanContext().TraceID(), got.TraceID())
	})
}

// Without a provider nothing is traced: the plugin's context carries no
// span (so exec and http pass none on).
func TestTraceOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		var got []trace.SpanContext
		job := funcJob(func(ctx context.Context, run jobs.Run) error {
			got = append(got, trace.SpanContextFromContext(ctx))
			return nil
		})
		s := e.scheduler("r1", nil, everySecond(t, "tick", job))
		require.Nil(t, s.tracer)
		stop := running(t, s)
		time.Sleep(1500 * time.Millisecond)
		stop()
		require.Len(t, got, 1)
		require.False(t, got[0].IsValid())
	})
}
