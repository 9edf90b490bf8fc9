package fence

import "fmt"

// ErrStale is the error every guard returns, wrapped in a *StaleError, when
// a write carries a token lower than the highest one already accepted for
// its resource: a newer run has written, and this write was refused.
// Test for it with errors.Is(err, fence.ErrStale).
var ErrStale error = staleSentinel{}

type staleSentinel struct{}

func (staleSentinel) Error() string { return "fence: stale fencing token" }

// ErrorClass is "stale_token", the class slotlock's history and run.failed
// line give a run that failed with this error.
func (staleSentinel) ErrorClass() string { return ErrorClass }

// ErrorClass is the error class of a refused write: a run that fails with
// an error wrapping ErrStale is recorded by slotlock as run.failed with
// error_class "stale_token".
const ErrorClass = "stale_token"

// StaleError describes one refused write. errors.Is(err, ErrStale) holds
// for it.
type StaleError struct {
	Resource string // the data key (Redis), resource name (SQL) or job (HTTP)
	Token    uint64 // the token the write carried
	Highest  uint64 // the highest token already accepted for Resource
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("fence: stale fencing token %d for %q: token %d was already accepted (a newer run wrote first)",
		e.Token, e.Resource, e.Highest)
}

// Is makes errors.Is(err, ErrStale) true.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

// ErrorClass is "stale_token" (see ErrorClass).
func (e *StaleError) ErrorClass() string { return ErrorClass }
