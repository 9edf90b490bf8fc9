package jobs

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
)

// ErrGoexit is returned by Execute when the job called runtime.Goexit
// (for example through a testing helper) instead of returning.
var ErrGoexit = errors.New("jobs: job called runtime.Goexit without returning")

// PanicError is the error Execute returns when a job panics.
type PanicError struct {
	Value any    // the value passed to panic
	Stack []byte // the panicking goroutine's stack (debug.Stack format)
}

func (e *PanicError) Error() string { return fmt.Sprintf("jobs: job panicked: %v", e.Value) }

// Unwrap returns the panic value when it is an error, so errors.Is and
// errors.As see through a panic(err).
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Execute runs j for run and returns its result. A panic inside the job
// does not propagate: it becomes a *PanicError carrying the value and the
// stack, and the stack is written to run's logger at error level. A job
// that calls runtime.Goexit fails with ErrGoexit. Execute does not add a
// timeout or look at ctx itself; the caller's ctx is passed through.
func Execute(ctx context.Context, j Job, run Run) error {
	if j == nil {
		return errors.New("jobs: Execute: nil job")
	}
	// The job runs on its own goroutine so that runtime.Goexit ends only
	// that goroutine, never the caller's.
	res := make(chan error, 1)
	go func() {
		returned := false
		defer func() {
			if returned {
				return
			}
			v := recover()
			if v == nil {
				res <- ErrGoexit
				return
			}
			pe := &PanicError{Value: v, Stack: debug.Stack()}
			run.Log().ErrorContext(ctx, "job panicked", "event", "run.panic",
				"panic", fmt.Sprint(v), "stack", string(pe.Stack))
			res <- pe
		}()
		err := j.Run(ctx, run)
		returned = true
		res <- err
	}()
	return <-res
}
