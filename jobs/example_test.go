package jobs_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/slotlock/slotlock/jobs"
)

func init() { jobs.Register("hello", newHello) } // panics if the name is taken

type params struct {
	Greeting string        `yaml:"greeting"`
	Pause    time.Duration `yaml:"pause"` // "500ms", "2s"
}

type hello struct{ p params }

// newHello runs once per job at load time (also under `slotlock validate`):
// decode strictly, check everything, start nothing.
func newHello(raw map[string]any) (jobs.Job, error) {
	p := params{Greeting: "hello"} // defaults first; keys absent from YAML keep them
	if err := jobs.DecodeParams(raw, &p); err != nil {
		return nil, err // e.g. `greting: unknown key (did you mean "greeting"?)`
	}
	if p.Pause < 0 {
		return nil, errors.New("pause: must not be negative")
	}
	return &hello{p: p}, nil
}

// Run is called once per attempt of each slot this replica wins.
func (h *hello) Run(ctx context.Context, run jobs.Run) error {
	select {
	case <-time.After(h.p.Pause):
	case <-ctx.Done():
		return context.Cause(ctx) // timeout, lock lost or shutdown
	}
	run.Log().InfoContext(ctx, h.p.Greeting, "event", "hello.said", "token", run.FencingToken)
	return nil
}

// A plugin registers a factory under a name from an init function (docs/plugins.md,
// "Writing a plugin", shows this file as package hello). Testing it
// needs no scheduler: build the job through jobs.Lookup, as the
// configuration loader does, and run one attempt with jobs.Execute, as the
// scheduler does.
func Example_plugin() {
	factory, _ := jobs.Lookup("hello")

	// params arrive as the YAML decoded them; a typo is an error naming it.
	_, err := factory(map[string]any{"greting": "hi there"})
	fmt.Println("factory:", err)

	job, err := factory(map[string]any{"greeting": "hi there", "pause": "10ms"})
	if err != nil {
		fmt.Println("factory:", err)
		return
	}
	// The scheduler hands each attempt a logger carrying the run's audit
	// fields; here a plain one, without the time so the output is stable.
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	err = jobs.Execute(context.Background(), job, jobs.Run{
		Job:          "greet",
		Slot:         time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC),
		RunID:        "3f2a9c1d0b7e4a56",
		Replica:      "replica-a",
		FencingToken: 42,
		Attempt:      1,
		Logger:       logger.With("job", "greet"),
	})
	fmt.Println("run:", err)

	// A canceled context ends the run with its cause.
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("shutting down"))
	slow, _ := factory(map[string]any{"pause": "1h"})
	fmt.Println("run:", jobs.Execute(ctx, slow, jobs.Run{Job: "greet", Attempt: 1, Logger: logger}))
	// Output:
	// factory: greting: unknown key (did you mean "greeting"?)
	// level=INFO msg="hi there" job=greet event=hello.said token=42
	// run: <nil>
	// run: shutting down
}

// A function of your own service becomes a Job with jobs.Func, no plugin
// needed: put it in a scheduler.JobSpec. Here one attempt runs the way the
// scheduler runs it, through jobs.Execute, which also turns a panic into
// an error.
func ExampleFunc() {
	report := jobs.Func(func(ctx context.Context, run jobs.Run) error {
		fmt.Printf("report for %s, attempt %d, token %d\n", run.SlotString(), run.Attempt, run.FencingToken)
		return nil
	})
	err := jobs.Execute(context.Background(), report, jobs.Run{
		Job:          "report",
		Slot:         time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC),
		FencingToken: 7,
		Attempt:      1,
	})
	fmt.Println("run:", err)

	broken := jobs.Func(func(context.Context, jobs.Run) error { panic("nil map") })
	err = jobs.Execute(context.Background(), broken, jobs.Run{Job: "report", Attempt: 1,
		Logger: slog.New(slog.DiscardHandler)})
	var pe *jobs.PanicError
	fmt.Println("run:", err, errors.As(err, &pe))
	// Output:
	// report for 2026-11-29T10:00:00Z, attempt 1, token 7
	// run: <nil>
	// run: jobs: job panicked: nil map true
}
