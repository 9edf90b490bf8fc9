package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"
)

// The slot history: when a slot ends with a done marker — a run's end, a
// skip for overlap or lateness that the winner marks, an abandoned run
// settled — its outcome is added to the job's log in the lock stores in the
// same script call (locking.Lease.End), so the history costs no
// round trip. The log keeps Config.HistoryKeep entries per job; ReadHistory
// merges the stores. A slot skipped for a pause gets its entry from the
// replicas that skipped it (one extra call each, while paused only), and a
// slot nobody ran, skipped or paused gets a missed entry from the
// reconciler (reconcile.go): in the end every slot has one.

// DefaultHistoryKeep is how many slot outcomes the stores keep per job.
const DefaultHistoryKeep = 1000

// HistoryEntry is one slot's outcome. It never holds an error's text (it
// may carry a secret): ErrorClass says what kind of failure it was.
type HistoryEntry struct {
	Slot       string `json:"slot"`                    // RFC 3339 UTC
	Outcome    string `json:"outcome"`                 // succeeded, failed, canceled, abandoned, skipped
	Reason     string `json:"reason,omitempty"`        // canceled: timeout, lock_lost, shutdown, replaced; skipped: overlap, late, replaced
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

// OutcomeSkipped is a history entry's outcome for a slot skipped by the
// replica that held it (Reason overlap or late).
const OutcomeSkipped = "skipped"

// OutcomeMissed is a history entry's outcome for a slot that nobody ran,
// skipped or paused: written by the reconciler with a MissedReasons
// reason (slot.missed).
const OutcomeMissed = "missed"

// HistoryOutcomes lists every outcome a history entry can have.
var HistoryOutcomes = []string{OutcomeSucceeded, OutcomeFailed, OutcomeCanceled, OutcomeAbandoned, OutcomeSkipped, OutcomeMissed}

// logEntry encodes e for the stores, scored by its slot's time.
func (e HistoryEntry) logEntry(slot time.Time) locking.LogEntry {
	b, _ := json.Marshal(e) // plain strings and numbers: cannot fail
	return locking.LogEntry{Score: slot.Unix(), Value: string(b)}
}

// ReadHistory returns job's recorded slot outcomes with a slot at since or
// later, newest first, at most limit: what a majority of locker's stores
// holds, one entry per slot (outcomePrecedence).
func ReadHistory(ctx context.Context, locker locking.Store, job string, since time.Time, limit int) ([]HistoryEntry, error) {
	var from int64
	if !since.IsZero() {
		from = since.Unix()
	}
	// A slot rarely has two entries; read a little more so that limit
	// slots remain after collapsing them.
	entries, err := locker.ReadLog(ctx, job, from, limit+min(limit, historySlack))
	if err != nil {
		return nil, err
	}
	out := make([]HistoryEntry, 0, len(entries))
	for _, le := range entries {
		e, ok := parseEntry(le)
		if !ok {
			return nil, fmt.Errorf("scheduler: history of %s: entry %q is not a slot outcome", job, le.Value)
		}
		if n := len(out); n > 0 && out[n-1].Slot == e.Slot {
			// Entries come newest first, so a slot's entries are adjacent.
			if outcomePrecedence(e.Outcome) > outcomePrecedence(out[n-1].Outcome) {
				out[n-1] = e
			}
			continue
		}
		out = append(out, e)
	}
	return out[:min(len(out), limit)], nil
}

// historySlack bounds the extra entries ReadHistory reads.
const historySlack = 64

// outcomePrecedence ranks the outcomes recorded for one slot, when it has
// more than one: a run's own end is the fact; abandoned is a verdict on a
// run that may still have ended after it (a replica that froze past its
// lease and woke); skipped and missed are verdicts on a slot nobody ran,
// which a claim that turns up later overrules.
func outcomePrecedence(outcome string) int {
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

// ParseSince reads a history window's bound as `slotlock history --since`
// and the status page's API take it: "" (the zero time: everything), a Go
// duration back from now (24h), or an RFC 3339 time.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("%q: a duration back from now must not be negative", s)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: want a duration (24h) or an RFC 3339 time", s)
	}
	return t, nil
}

// parseEntry reads a history entry.
func parseEntry(le locking.LogEntry) (HistoryEntry, bool) {
	var e HistoryEntry
	if err := json.Unmarshal([]byte(le.Value), &e); err != nil || e.Outcome == "" {
		return HistoryEntry{}, false
	}
	return e, true
}

// errorClass names the kind of a failed run's error without its text: a
// panic, or what the error says of itself (a plugin's error may implement
// ErrorClass() string, e.g. "exit_status" or "http_status"), else "error".
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
