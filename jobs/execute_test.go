package jobs

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
)

func panickyHelper() { panic("kaboom") }

func TestExecuteRecoversPanic(t *testing.T) {
	run, logs := testRun(t)
	err := Execute(context.Background(), Func(func(context.Context, Run) error {
		panickyHelper()
		return nil
	}), run)
	var pe *PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("Execute returned %v (%T), want *PanicError", err, err)
	}
	if pe.Value != "kaboom" || !strings.Contains(err.Error(), "kaboom") {
		t.Fatalf("panic value lost: %v / %v", pe.Value, err)
	}
	if !strings.Contains(string(pe.Stack), "panickyHelper") {
		t.Fatalf("stack does not show the panicking function:\n%s", pe.Stack)
	}
	line := logs.Event(t, "run.panic")
	if line["level"] != "ERROR" || line["job"] != "nightly-report" || line["panic"] != "kaboom" {
		t.Fatalf("panic log line: %v", line)
	}
	if !strings.Contains(line["stack"].(string), "panickyHelper") {
		t.Fatalf("logged stack lacks the panicking function: %v", line["stack"])
	}
}

func TestExecutePanicWithErrorUnwraps(t *testing.T) {
	sentinel := errors.New("sentinel")
	run, _ := testRun(t)
	err := Execute(context.Background(), Func(func(context.Context, Run) error { panic(sentinel) }), run)
	if !errors.Is(err, sentinel) {
		t.Fatalf("errors.Is(panic(err), err) = false: %v", err)
	}
	var nilErr *runtime.PanicNilError
	err = Execute(context.Background(), Func(func(context.Context, Run) error { panic(nil) }), run)
	if !errors.As(err, &nilErr) {
		t.Fatalf("panic(nil): %v", err)
	}
}

func TestExecuteGoexit(t *testing.T) {
	run, _ := testRun(t)
	err := Execute(context.Background(), Func(func(context.Context, Run) error {
		runtime.Goexit()
		return nil
	}), run)
	if !errors.Is(err, ErrGoexit) {
		t.Fatalf("Goexit: %v", err)
	}
}

func TestExecutePassesResultAndContext(t *testing.T) {
	want := errors.New("job failed")
	run, _ := testRun(t)
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "v")
	err := Execute(ctx, Func(func(ctx context.Context, r Run) error {
		if ctx.Value(key{}) != "v" || r.RunID != "r-123" || r.FencingToken != 42 {
			return errors.New("context or run not passed through")
		}
		return want
	}), run)
	if err != want {
		t.Fatalf("Execute = %v, want the job's own error", err)
	}
	if err := Execute(ctx, Func(func(context.Context, Run) error { return nil }), run); err != nil {
		t.Fatalf("Execute of a succeeding job = %v", err)
	}
	if err := Execute(ctx, nil, run); err == nil {
		t.Fatal("Execute(nil job) = nil")
	}
}

func TestRunSlotString(t *testing.T) {
	loc := time.FixedZone("CET", 3600)
	r := Run{Slot: time.Date(2026, 11, 29, 11, 0, 5, 300, loc)}
	if got := r.SlotString(); got != "2026-11-29T10:00:05Z" {
		t.Fatalf("SlotString = %q", got)
	}
	if got := (Run{Manual: true, Slot: time.Now()}).SlotString(); got != "manual" {
		t.Fatalf("manual SlotString = %q", got)
	}
	if (Run{}).Log() == nil {
		t.Fatal("Log() of a Run without logger is nil")
	}
}
