package smallworld

import (
	"time"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// The world's history entries are the product's: history.Entry encoded
// as the scheduler encodes it (JSON), scored by the slot's Unix time, so
// that the stores sort and merge them as they sort and merge the
// product's (driver.MergeLogs orders equal scores by value, and the
// order a reader meets a slot's entries in is part of what is checked).
// The model names an entry's kind by a short code (outcome, reason and
// flag), which the invariants read (kindOf).
const (
	outSucceeded = "succeeded"
	outAbandoned = "abandoned"
	// outMissed is the reconciler's verdict: missed, reason unknown.
	outMissed = "missed"
	// outMayHaveStarted is what settleUnconfirmed writes for a claim taken
	// over whose holder never confirmed its start: outcome missed, reason
	// unknown, MayHaveStarted — neither run again nor reported abandoned.
	outMayHaveStarted = "missed:unknown:may_have_started"
	// outSkippedLate is the start-up probe's entry (probeLate).
	outSkippedLate = "skipped:late"
	// outSkippedPaused is pausedSlot's entry, and the reconciler's for a
	// slot its pause covers.
	outSkippedPaused = "skipped:paused"
	// outSkippedOverlap is a slot skipped for overlap (takeJobLease,
	// allowRuns).
	outSkippedOverlap = "skipped:overlap"
)

// slotTime is slot i's nominal time: its entries' score is i+1.
func slotTime(slot int) time.Time { return time.Unix(int64(slot+1), 0).UTC() }

// histEntry is the history.Entry of kind code for slot, as its writer
// fills it: runID and replica for a run's own entries, nothing more for
// the reconciler's and the probe's verdicts.
func histEntry(slot int, code, runID, replica string) history.Entry {
	e := history.Entry{Slot: jobs.SlotString(slotTime(slot)), RunID: runID, Replica: replica}
	switch code {
	case outMayHaveStarted:
		e.Outcome, e.Reason, e.MayHaveStarted = history.OutcomeMissed, history.ReasonUnknown, true
	case outMissed:
		e.Outcome, e.Reason = history.OutcomeMissed, history.ReasonUnknown
	case outSkippedLate:
		e.Outcome, e.Reason = history.OutcomeSkipped, history.ReasonLate
	case outSkippedPaused:
		e.Outcome, e.Reason = history.OutcomeSkipped, history.ReasonPaused
	case outSkippedOverlap:
		e.Outcome, e.Reason = history.OutcomeSkipped, history.ReasonOverlap
	default:
		e.Outcome = history.Outcome(code)
	}
	return e
}

// entry is a run's or a verdict's log entry.
func entry(slot int, code, runID, replica string) locking.LogEntry {
	return histEntry(slot, code, runID, replica).LogEntry(slotTime(slot))
}

// settledEntry is a settler's entry for the run runID: it names its
// settler and the settler's claim (history.Entry.SettleID), so that a
// settler's retried end counts the stores holding its own entry.
func settledEntry(slot int, code, runID, holder, settler, settleID string) locking.LogEntry {
	e := histEntry(slot, code, runID, holder)
	e.SettledBy, e.SettleID = settler, settleID
	return e.LogEntry(slotTime(slot))
}

// parsed is the history.Entry of a stored value (zero when it is none).
func parsed(value string) history.Entry {
	e, _ := history.ParseEntry(locking.LogEntry{Value: value})
	return e
}

// kindOf is the model's code of a stored entry.
func kindOf(value string) string {
	e := parsed(value)
	switch {
	case e.Outcome == history.OutcomeMissed && e.MayHaveStarted:
		return outMayHaveStarted
	case e.Outcome == history.OutcomeMissed:
		return outMissed
	case e.Outcome == history.OutcomeSkipped:
		return "skipped:" + string(e.Reason)
	}
	return string(e.Outcome)
}
