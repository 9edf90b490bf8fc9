package jobs

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestLogPlugin(t *testing.T) {
	run, logs := testRun(t)
	if err := mustJob(t, "log", map[string]any{"message": "still alive"}).Run(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	line := logs.Event(t, "job.log")
	if line["msg"] != "still alive" || line["level"] != "INFO" || line["job"] != "nightly-report" {
		t.Fatalf("log line: %v", line)
	}
	logs.buf.Reset()
	if err := mustJob(t, "log", map[string]any{"message": "careful", "level": "warn"}).Run(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	if line := logs.Event(t, "job.log"); line["level"] != "WARN" {
		t.Fatalf("level warn: %v", line)
	}

	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("shutdown")
	cancel(cause)
	if err := mustJob(t, "log", map[string]any{"message": "x"}).Run(ctx, run); !errors.Is(err, cause) {
		t.Fatalf("canceled log run = %v", err)
	}
}

func TestLogFactoryErrors(t *testing.T) {
	f, _ := Lookup("log")
	for _, tc := range []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{}, "message: required"},
		{map[string]any{"message": "x", "level": "loud"}, `level: want debug, info, warn or error, got "loud"`},
		{map[string]any{"mesage": "x"}, `mesage: unknown key (did you mean "message"?)`},
	} {
		if _, err := f(tc.params); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.params, err, tc.want)
		}
	}
}
