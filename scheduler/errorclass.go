package scheduler

import (
	"errors"

	"github.com/slotlock/slotlock/jobs"
)

// errorClass names the kind of a failed run's error without its text (the
// history entry's and the span's error class: the text may carry a
// secret): a panic, or what the error says of itself (a plugin's error may
// implement ErrorClass() string, e.g. "exit_status" or "http_status"),
// else "error".
func errorClass(err error) string {
	var pe *jobs.PanicError
	if errors.As(err, &pe) {
		return "panic"
	}
	var c interface{ ErrorClass() string }
	if errors.As(err, &c) {
		return c.ErrorClass()
	}
	return "error"
}

// declaredErrorClass is the class a canceled run's error gives itself
// (ErrorClass() string), else "": a run canceled because its lease was
// lost may have been refused as stale by its own fence first (an exec
// recipe's exit 75, fence.ErrStale), and its entry says so beside the
// cancel reason. The error a cancel leaves behind otherwise (context
// canceled, a killed program) says nothing the reason does not.
func declaredErrorClass(err error) string {
	var c interface{ ErrorClass() string }
	if err != nil && errors.As(err, &c) {
		return c.ErrorClass()
	}
	return ""
}
