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
