package scheduler

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"
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
	// judge within a day (reconcile.go).
	evLockReleaseFailed = "lock.release_failed"
	evMisfireCheck      = "misfire.check"
	evScheduleExhausted = "schedule.exhausted"
	evSlotsUnjudged     = "reconcile.unjudged"
)

// Events of the pause commands, logged by the command and by each
// replica when it sees the job's pause state change.
const (
	EventJobPaused  = "job.paused"
	EventJobResumed = "job.resumed"
)

// Skip reasons: slot.skipped's reason, and the reason label of
// slotlock_slots_skipped_total.
const (
	ReasonHeld     = "held"
	ReasonDone     = "done"
	ReasonOverlap  = "overlap"
	ReasonLate     = "late"
	ReasonNoQuorum = "no_quorum"
	// ReasonSlowLock: the stores answered too slowly to leave the lease
	// any validity (locking.ErrSlowAcquire).
	ReasonSlowLock = "slow_lock"
	// ReasonShutdown: the shutdown grace ended while a won slot waited for
	// its job lease; the slot was handed back unmarked.
	ReasonShutdown = "shutdown"
	// ReasonClaimed: a claim of the slot was found on a minority of the
	// stores: it may be a started run's (some store did not answer:
	// locking.HeldError.Claimed), or a leftover (locking.Lease.Leftover);
	// either way the slot is not run. It is reported as abandoned, or
	// cleared as a leftover, by a later claim of the job.
	ReasonClaimed = "claimed"
	// ReasonPaused: the job was paused at the slot (slotlock pause).
	ReasonPaused = "paused"
	// ReasonReplaced: overlap replace; a newer slot (by_slot) asked for
	// the job lease while this slot still waited for it, so this one never
	// started (replace.go).
	ReasonReplaced = "replaced"
)

// SkipReasons lists every skip reason.
var SkipReasons = []string{ReasonHeld, ReasonDone, ReasonOverlap, ReasonLate, ReasonNoQuorum,
	ReasonSlowLock, ReasonShutdown, ReasonClaimed, ReasonPaused, ReasonReplaced}

// Reasons of slot.missed (and of a missed slot's history entry): nobody
// was up at the slot, the stores had no majority (ReasonNoQuorum), or
// neither is known.
const (
	MissedNoReplica = "no_replica"
	MissedUnknown   = "unknown"
)

// MissedReasons lists every reason of slot.missed.
var MissedReasons = []string{MissedNoReplica, ReasonNoQuorum, MissedUnknown}

// Cancel reasons (run.canceled's reason).
const (
	cancelTimeout  = "timeout"
	cancelLockLost = "lock_lost"
	cancelShutdown = "shutdown"
	cancelReplaced = "replaced" // overlap replace: a newer slot took over (by_slot)
)

// SlotManual is the slot of a manual run (slotlock trigger) in the logs
// and SLOTLOCK_SLOT.
const SlotManual = "manual"

// slotString formats a slot as the contract wants (jobs.SlotString).
func slotString(t time.Time) string { return jobs.SlotString(t) }

func runKey(job string) locking.Key  { return locking.Key{Family: job, Name: "run"} }
func lastKey(job string) locking.Key { return locking.Key{Family: job, Name: "last"} }

// skipped logs slot.skipped and counts it. held and done are debug (the
// normal case on every losing replica); the rest are info or warn.
func (s *Scheduler) skipped(job, slot, reason string, n int, attrs ...any) {
	level := slog.LevelDebug
	switch reason {
	case ReasonOverlap, ReasonPaused, ReasonReplaced:
		level = slog.LevelInfo
	case ReasonLate, ReasonNoQuorum, ReasonSlowLock, ReasonShutdown, ReasonClaimed:
		level = slog.LevelWarn
	}
	for range n {
		s.metrics.SlotSkipped(job, reason)
	}
	if !s.log.Enabled(context.Background(), level) {
		return
	}
	args := append([]any{"event", evSlotSkipped, "job", job, "slot", slot, "reason", reason}, attrs...)
	s.log.Log(context.Background(), level, "slot skipped", args...)
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
func cancelReason(cause error) string {
	switch {
	case errors.Is(cause, ErrTimeout):
		return cancelTimeout
	case errors.Is(cause, locking.ErrLockLost):
		return cancelLockLost
	case errors.Is(cause, ErrReplaced):
		return cancelReplaced
	default:
		return cancelShutdown
	}
}
