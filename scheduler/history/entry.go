package history

import (
	"encoding/json"
	"time"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"
)

// Entry is one slot's outcome in a job's history. It never holds an
// error's text (it may carry a secret): ErrorClass says what kind of
// failure it was.
type Entry struct {
	Slot       string `json:"slot"`                    // RFC 3339 UTC
	Outcome    string `json:"outcome"`                 // succeeded, failed, canceled, abandoned, skipped, missed
	Reason     string `json:"reason,omitempty"`        // canceled: timeout, lock_lost, shutdown, replaced; skipped: overlap, late, replaced, paused; missed: no_replica, no_quorum, unknown
	BySlot     string `json:"by_slot,omitempty"`       // reason replaced: the newer slot that took over
	Replica    string `json:"replica,omitempty"`       // who ran it (abandoned: the dead run's replica); who skipped it
	RunID      string `json:"run_id,omitempty"`        // the run's id
	Token      uint64 `json:"fencing_token,omitempty"` // the run's fencing token
	Attempts   int    `json:"attempts,omitempty"`      // attempts made
	DurationMS int64  `json:"duration_ms,omitempty"`   // from the run's start to its end
	ErrorClass string `json:"error_class,omitempty"`   // failed: panic, or what the plugin's error says (ErrorClass), else error
	Recovered  bool   `json:"recovered,omitempty"`     // run by the misfire policy after every replica had missed it
	// MayHaveStarted (missed, reason unknown): a replica won the slot and
	// stopped before confirming that its run started (Replica, RunID name
	// it); whether the job body began is unknown, so the slot is never
	// run again: backfill refuses it.
	MayHaveStarted bool `json:"may_have_started,omitempty"`
}

// Outcomes of a slot. A run that ended is succeeded, failed or canceled
// (RunOutcomes: the outcome label of slotlock_runs_total and the note of
// the slot's done marker); abandoned is a run that never ended
// (run.abandoned); skipped a slot the replica that held it did not run
// (its Reason says why); missed a slot nobody ran, skipped or paused,
// written by the reconciler (slot.missed).
const (
	OutcomeSucceeded = "succeeded"
	OutcomeFailed    = "failed"
	OutcomeCanceled  = "canceled"
	OutcomeAbandoned = "abandoned"
	OutcomeSkipped   = "skipped"
	OutcomeMissed    = "missed"
)

// RunOutcomes lists the outcomes of runs that ended.
var RunOutcomes = []string{OutcomeSucceeded, OutcomeFailed, OutcomeCanceled}

// Outcomes lists every outcome an entry can have.
var Outcomes = []string{OutcomeSucceeded, OutcomeFailed, OutcomeCanceled, OutcomeAbandoned, OutcomeSkipped, OutcomeMissed}

// LogEntry encodes e for the stores, scored by its slot's time.
func (e Entry) LogEntry(slot time.Time) locking.LogEntry {
	b, _ := json.Marshal(e) // plain strings and numbers: cannot fail
	return locking.LogEntry{Score: slot.Unix(), Value: string(b)}
}

// ParseEntry reads a history entry from the stores; false when le is not
// one.
func ParseEntry(le locking.LogEntry) (Entry, bool) {
	var e Entry
	if err := json.Unmarshal([]byte(le.Value), &e); err != nil || e.Outcome == "" {
		return Entry{}, false
	}
	return e, true
}

// Overrules reports whether e, an entry of the same slot as old, is the
// one to show when a slot has two: a run's own end is the fact; abandoned
// is a verdict on a run that may still have ended after it (a replica
// that froze past its lease and woke); skipped and missed are verdicts on
// a slot nobody ran, which a claim that turns up later overrules.
func (e Entry) Overrules(old Entry) bool {
	return precedence(e.Outcome) > precedence(old.Outcome)
}

func precedence(outcome string) int {
	switch outcome {
	case OutcomeSucceeded, OutcomeFailed, OutcomeCanceled:
		return 3
	case OutcomeAbandoned:
		return 2
	case OutcomeSkipped:
		return 1
	}
	return 0
}

// slotString formats a slot as the contract wants (jobs.SlotString).
func slotString(t time.Time) string { return jobs.SlotString(t) }
