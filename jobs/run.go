package jobs

import (
	"context"
	"log/slog"
	"time"
)

// Job is one configured job, built by its plugin's Factory from the job's
// params. Run is called once per attempt of a slot, possibly concurrently
// for different slots when the job allows overlap, so implementations must
// be safe for concurrent use.
//
// ctx is canceled when the run must stop: the job's timeout, the loss of its
// lease, the replica's shutdown or, under overlap replace, a newer slot
// taking over. context.Cause(ctx) tells which (for example
// locking.ErrLockLost, scheduler.ErrReplaced or context.DeadlineExceeded). A job should
// return promptly after ctx is done, with an error wrapping the cause. A
// nil return means the run succeeded.
type Job interface {
	Run(ctx context.Context, run Run) error
}

// Func is a function that is a Job: the way to schedule a function of
// your own service without writing a plugin.
//
//	job := jobs.Func(func(ctx context.Context, run jobs.Run) error {
//		return send(ctx, run.FencingToken)
//	})
//
// The function must be safe for concurrent use, as any Job.
type Func func(ctx context.Context, run Run) error

// Run calls f(ctx, run).
func (f Func) Run(ctx context.Context, run Run) error { return f(ctx, run) }

// Graceful is implemented by a Job whose run may go on for a while after
// its ctx is canceled (exec: kill_grace, the SIGTERM -> SIGKILL delay).
// Another replica may start the next run as soon as the lease expires, so
// while renewals fail the scheduler cancels such a run a grace before its
// lease's validity ends; the configuration requires the grace to be less
// than lock.ttl/2 - lock.max_clock_skew, and cuts a default grace to fit.
type Graceful interface {
	// StopGrace returns the grace, and whether the job's params set it.
	StopGrace() (grace time.Duration, configured bool)
	// WithStopGrace returns a copy of the job with grace d.
	WithStopGrace(d time.Duration) Job
}

// Run describes one attempt of one slot of a job.
type Run struct {
	// Job is the job's configured name.
	Job string
	// Slot is the nominal time of the slot, in UTC. It is zero when Manual.
	Slot time.Time
	// Manual is true for a run started by `slotlock trigger`.
	Manual bool
	// RunID identifies the run of a slot; retry attempts share it.
	RunID string
	// Replica is the name of the replica running the job.
	Replica string
	// FencingToken is strictly greater than the token of every earlier run
	// of this job. Downstream systems can reject writes carrying a lower
	// token than one they have already seen.
	FencingToken uint64
	// Attempt counts from 1; retries of the same slot increase it.
	Attempt int
	// Logger already carries the run's audit fields (job, slot, run_id,
	// fencing_token, attempt, replica). It may be nil, in which case
	// plugins fall back to slog.Default().
	Logger *slog.Logger
}

// SlotString formats the slot as the contract's SLOTLOCK_SLOT and the log's
// slot field do: RFC 3339 in UTC with whole seconds
// ("2026-11-29T10:00:05Z"), or "manual" for a manual run.
func (r Run) SlotString() string {
	if r.Manual || r.Slot.IsZero() {
		return "manual"
	}
	return SlotString(r.Slot)
}

// SlotString formats a slot's nominal time as the contract does: RFC 3339
// in UTC, whole seconds, Z suffix.
func SlotString(t time.Time) string { return t.UTC().Truncate(time.Second).Format(time.RFC3339) }

// Log returns r.Logger, or slog.Default() when it is nil. It never returns nil.
func (r Run) Log() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.Default()
}
