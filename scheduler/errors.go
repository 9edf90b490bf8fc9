package scheduler

import "errors"

// Errors.
var (
	// ErrTimeout is the cause of a run's context when the job's timeout ends it.
	ErrTimeout = errors.New("scheduler: job timeout")
	// ErrShutdown is the cause of a run's context when the replica shuts down
	// (after the grace period) or a Trigger's context ends.
	ErrShutdown = errors.New("scheduler: shutting down")
	// ErrReplaced is the cause of a run's context when a newer slot of its
	// overlap: replace job takes over (the cause is a *ReplacedError that
	// names the newer slot; errors.Is(cause, ErrReplaced) holds).
	ErrReplaced = errors.New("scheduler: replaced by a newer slot")
	// ErrUnknownJob is returned by Trigger and Next for a name not configured.
	ErrUnknownJob = errors.New("scheduler: unknown job")
	// ErrStopped is returned by Run and Trigger after the scheduler stopped.
	ErrStopped = errors.New("scheduler: stopped")
	// ErrRunFailed is wrapped by Trigger's error when the run ended but did
	// not succeed.
	ErrRunFailed = errors.New("scheduler: run did not succeed")
)

// Errors acquire returns without asking the stores.
var (
	errStale    = errors.New("scheduler: slot became late while waiting to be tried")
	errStopping = errors.New("scheduler: shutting down")
)
