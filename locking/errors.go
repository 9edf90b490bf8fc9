package locking

import "errors"

// slowAcquireError is ErrSlowAcquire for one key.
type slowAcquireError struct{ key Key }

func (e *slowAcquireError) Error() string { return ErrSlowAcquire.Error() + ": " + e.key.String() }

func (e *slowAcquireError) Is(target error) bool { return target == ErrSlowAcquire }

// errLeaseEnded is the cause of a kept context once its lease was released
// or marked done by its owner.
var errLeaseEnded = errors.New("locking: lease released")
