package scheduler

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// Audit event names (the contract's table).
const (
	evSlotAcquired     = "slot.acquired"
	evSlotSkipped      = "slot.skipped"
	evRunStarted       = "run.started"
	evRunSucceeded     = "run.succeeded"
	evRunFailed        = "run.failed"
	evRunRetrying      = "run.retrying"
	evRunCanceled      = "run.canceled"
	evLockLost         = "lock.lost"
	evMisfireRecovered = "misfire.recovered"
	evRunAbandoned     = "run.abandoned"
	evSlotMissed       = "slot.missed"

	// Not in the contract's table: a lease could not be ended cleanly (it
	// then expires after its TTL); the misfire policy looking at a slot;
	// a schedule that has no slot left; slots the reconciler could not
	// judge within a day (reconciler.go); the clock check's findings.
	evLockReleaseFailed = "lock.release_failed"
	evMisfireCheck      = "misfire.check"
	evScheduleExhausted = "schedule.exhausted"
	evSlotsUnjudged     = "reconcile.unjudged"
	// This replica's clock against the lock nodes' (clockcheck.go): off
	// by more than half of MaxClockSkew, and back within it.
	evClockOff  = "clock.off"
	evClockBack = "clock.back"
	// A lock node's clock against the other nodes' (their median).
	evClockNodeOff  = "clock.node_off"
	evClockNodeBack = "clock.node_back"
	// Lock nodes that are not independent servers (nodecheck.go), and
	// such a finding gone.
	evNodeDependent   = "lock.node_dependent"
	evNodeIndependent = "lock.node_independent"
	// Another process runs under this replica's name (namecheck.go).
	evReplicaNameShared = "replica.name_shared"
)

// Events of the pause commands, logged by the command and by each
// replica when it sees the job's pause state change.
const (
	EventJobPaused  = "job.paused"
	EventJobResumed = "job.resumed"
)

// SlotManual is the slot of a manual run (slotlock trigger) in the logs
// and SLOTLOCK_SLOT.
const SlotManual = "manual"

// slotString formats a slot as the contract wants (jobs.SlotString).
func slotString(t time.Time) string { return jobs.SlotString(t) }

// skipped logs slot.skipped and counts it. held and done are debug (the
// normal case on every losing replica); the rest are info or warn.
func (e *engine) skipped(job, slot string, reason history.Reason, n int, attrs ...any) {
	level := slog.LevelDebug
	switch reason {
	case history.ReasonOverlap, history.ReasonPaused, history.ReasonReplaced, history.ReasonGroupFull:
		level = slog.LevelInfo
	case history.ReasonLate, history.ReasonNoQuorum, history.ReasonSlowLock, history.ReasonShutdown, history.ReasonClaimed:
		level = slog.LevelWarn
	}
	for range n {
		e.metrics.SlotSkipped(job, reason)
	}
	if !e.log.Enabled(context.Background(), level) {
		return
	}
	args := append([]any{"event", evSlotSkipped, "job", job, "slot", slot, "reason", string(reason)}, attrs...)
	// The message is the event, which the command's JSON lines leave
	// out: past capacity a replica writes one of these per slot it sheds.
	e.log.Log(context.Background(), level, evSlotSkipped, args...)
}

// heldAttrs describes a lost Acquire for slot.skipped.
func heldAttrs(err error) []any {
	var he *locking.HeldError
	if errors.As(err, &he) {
		a := []any{}
		if he.Holder != "" {
			a = append(a, "holder", he.Holder)
		}
		if he.Note != "" {
			a = append(a, "note", he.Note)
		}
		return a
	}
	return nil
}

// cancelReason maps the cause of a run's context to run.canceled's reason.
func cancelReason(cause error) history.Reason {
	switch {
	case errors.Is(cause, ErrTimeout):
		return history.ReasonTimeout
	case errors.Is(cause, locking.ErrLockLost):
		return history.ReasonLockLost
	case errors.Is(cause, ErrReplaced):
		return history.ReasonReplaced
	default:
		return history.ReasonShutdown
	}
}
