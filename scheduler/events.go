package scheduler

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

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
	// Not in the contract's table: a lease could not be ended cleanly (it
	// then expires after its TTL); the misfire policy looking at a slot;
	// a schedule that has no slot left.
	evLockReleaseFailed = "lock.release_failed"
	evMisfireCheck      = "misfire.check"
	evScheduleExhausted = "schedule.exhausted"
)

// Skip reasons.
const (
	reasonHeld     = "held"
	reasonDone     = "done"
	reasonOverlap  = "overlap"
	reasonLate     = "late"
	reasonNoQuorum = "no_quorum"
	// Not in the first round's table: the stores answered too slowly to
	// leave the lease any validity; shutdown ended the wait for a won
	// slot's job lease (the slot is handed back unmarked).
	reasonSlowLock = "slow_lock"
	reasonShutdown = "shutdown"
	// A claim of the slot was found on a minority of the stores while
	// some did not answer: it may be a started run's, so the slot is not
	// run (locking.HeldError.Claimed); it is reported as abandoned, or
	// cleared as a leftover, once every store answers.
	reasonClaimed = "claimed"
)

// Cancel reasons.
const (
	cancelTimeout  = "timeout"
	cancelLockLost = "lock_lost"
	cancelShutdown = "shutdown"
)

// Outcomes (RunFinished, done marker notes).
const (
	outcomeSucceeded = "succeeded"
	outcomeFailed    = "failed"
	outcomeCanceled  = "canceled"
	outcomeAbandoned = "abandoned"
)

const slotManual = "manual"

// slotString formats a slot as the contract wants: RFC 3339 in UTC, whole
// seconds, Z suffix.
func slotString(t time.Time) string { return t.UTC().Truncate(time.Second).Format(time.RFC3339) }

// slotPrefix starts the name of a slot's key.
const slotPrefix = "slot:"

func slotKey(job string, t time.Time) locking.Key {
	return locking.Key{Family: job, Name: slotPrefix + strconv.FormatInt(t.Unix(), 10)}
}

func runKey(job string) locking.Key  { return locking.Key{Family: job, Name: "run"} }
func lastKey(job string) locking.Key { return locking.Key{Family: job, Name: "last"} }

// skipped logs slot.skipped and counts it. held and done are debug (the
// normal case on every losing replica); the rest are info or warn.
func (s *Scheduler) skipped(job, slot, reason string, n int, attrs ...any) {
	level := slog.LevelDebug
	switch reason {
	case reasonOverlap:
		level = slog.LevelInfo
	case reasonLate, reasonNoQuorum, reasonSlowLock, reasonShutdown, reasonClaimed:
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
	default:
		return cancelShutdown
	}
}

func ms(d time.Duration) int64 { return d.Milliseconds() }
