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
	Slot       string  `json:"slot"`                    // RFC 3339 UTC
	Outcome    Outcome `json:"outcome"`                 // succeeded, failed, canceled, abandoned, skipped, missed
	Reason     Reason  `json:"reason,omitempty"`        // canceled: timeout, lock_lost, shutdown, replaced; skipped: overlap, late, replaced, paused, group_full; missed: no_replica, no_quorum, unknown
	BySlot     string  `json:"by_slot,omitempty"`       // reason replaced: the newer slot that took over
	Replica    string  `json:"replica,omitempty"`       // who ran it (abandoned: the dead run's replica); who skipped it
	RunID      string  `json:"run_id,omitempty"`        // the run's id
	Token      uint64  `json:"fencing_token,omitempty"` // the run's fencing token
	Attempts   int     `json:"attempts,omitempty"`      // attempts made
	DurationMS int64   `json:"duration_ms,omitempty"`   // from the run's start to its end
	ErrorClass string  `json:"error_class,omitempty"`   // failed: panic, or what the plugin's error says (ErrorClass), else error; canceled: what the error says, if anything (stale_token)
	Recovered  bool    `json:"recovered,omitempty"`     // run by the misfire policy after every replica had missed it
	// MayHaveStarted (missed, reason unknown): a replica won the slot and
	// stopped before confirming that its run started (Replica, RunID name
	// it); whether the job body began is unknown, so the slot is never
	// run again: backfill refuses it.
	MayHaveStarted bool `json:"may_have_started,omitempty"`
	// SettledBy and SettleID (abandoned, and missed with MayHaveStarted):
	// the replica that found the run's lease expired and closed the slot,
	// and the id of its claim. They make the entry its settler's own: a
	// settler whose end was answered by nobody tells by its entry, long
	// after, whether that end landed (locking.Ending.Entry), so no two
	// settlers may write the same one.
	SettledBy string `json:"settled_by,omitempty"`
	SettleID  string `json:"settle_id,omitempty"`
	// WrittenMS (a slot a replica skipped: Replica) is when it wrote the
	// entry, in milliseconds since the epoch on its clock. The skip's only
	// line follows the write: a replica killed in between leaves the
	// outcome here and in no log, and the reconciler, seeing no heartbeat
	// of it after this time (Fleet.AfterWrite), reports it again.
	WrittenMS int64 `json:"written_ms,omitempty"`
}

// Outcome is what became of a slot: an Entry's outcome.
type Outcome string

// Outcomes of a slot. A run that ended is succeeded, failed or canceled
// (RunOutcomes: the outcome label of slotlock_runs_total and the note of
// the slot's done marker); abandoned is a run that never ended
// (run.abandoned); skipped a slot the replica that held it did not run
// (its Reason says why); missed a slot nobody ran, skipped or paused,
// written by the reconciler (slot.missed).
const (
	OutcomeSucceeded Outcome = "succeeded"
	OutcomeFailed    Outcome = "failed"
	OutcomeCanceled  Outcome = "canceled"
	OutcomeAbandoned Outcome = "abandoned"
	OutcomeSkipped   Outcome = "skipped"
	OutcomeMissed    Outcome = "missed"
)

// RunOutcomes lists the outcomes of runs that ended.
var RunOutcomes = []Outcome{OutcomeSucceeded, OutcomeFailed, OutcomeCanceled}

// Outcomes lists every outcome an entry can have.
var Outcomes = []Outcome{OutcomeSucceeded, OutcomeFailed, OutcomeCanceled, OutcomeAbandoned, OutcomeSkipped, OutcomeMissed}

// Reason says why a slot was skipped, missed or its run canceled: the
// reason of slot.skipped, slot.missed and run.canceled, and of an Entry.
type Reason string

// Skip reasons: slot.skipped's reason (SkipReasons), and the reason label
// of slotlock_slots_skipped_total. An entry records overlap, late,
// replaced, paused and group_full; the others are a replica's own view of a slot
// another one handles.
const (
	ReasonHeld     Reason = "held"
	ReasonDone     Reason = "done"
	ReasonOverlap  Reason = "overlap"
	ReasonLate     Reason = "late"
	ReasonNoQuorum Reason = "no_quorum"
	// ReasonSlowLock: the stores answered too slowly to leave the lease
	// any validity (locking.ErrSlowAcquire).
	ReasonSlowLock Reason = "slow_lock"
	// ReasonShutdown: the shutdown grace ended while a won slot waited for
	// its job lease; the slot was handed back unmarked. Also a cancel
	// reason: the replica shut down during the run.
	ReasonShutdown Reason = "shutdown"
	// ReasonClaimed: a claim of the slot was found on a minority of the
	// stores: it may be a started run's (some store did not answer:
	// locking.HeldError.Claimed), or a leftover (locking.Lease.Leftover);
	// either way the slot is not run. It is reported as abandoned, or
	// cleared as a leftover, by a later claim of the job.
	ReasonClaimed Reason = "claimed"
	// ReasonPaused: the job was paused at the slot (slotlock pause).
	ReasonPaused Reason = "paused"
	// ReasonReplaced: overlap replace; a newer slot (by_slot) asked for
	// the job lease while this slot still waited for it, so this one never
	// started. Also a cancel reason: a newer slot took over the run.
	ReasonReplaced Reason = "replaced"
	// ReasonGroupFull: the job's concurrency group had every permit
	// taken until the slot's lateness bound; its body never started.
	ReasonGroupFull Reason = "group_full"
)

// Cancel reasons (run.canceled's reason, beside ReasonShutdown and
// ReasonReplaced): the job's timeout passed, or its lease was lost.
const (
	ReasonTimeout  Reason = "timeout"
	ReasonLockLost Reason = "lock_lost"
)

// Reasons of slot.missed (and of a missed slot's entry): nobody was up at
// the slot, the stores had no majority (ReasonNoQuorum), or neither is
// known.
const (
	ReasonNoReplica Reason = "no_replica"
	ReasonUnknown   Reason = "unknown"
)

// SkipReasons lists every skip reason.
var SkipReasons = []Reason{ReasonHeld, ReasonDone, ReasonOverlap, ReasonLate, ReasonNoQuorum,
	ReasonSlowLock, ReasonShutdown, ReasonClaimed, ReasonPaused, ReasonReplaced, ReasonGroupFull}

// MissedReasons lists every reason of slot.missed.
var MissedReasons = []Reason{ReasonNoReplica, ReasonNoQuorum, ReasonUnknown}

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

// slotString formats a slot as the contract wants (jobs.SlotString).
func slotString(t time.Time) string { return jobs.SlotString(t) }
