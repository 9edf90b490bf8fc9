package history

import (
	"cmp"
	"strings"
)

// The outcome of a slot is the join of all its entries, wherever they
// were written and in whatever order they are read.
//
// A slot may have several entries: a run's own end and a settler's
// abandoned verdict; a reconciler's missed and a settler's missed with
// may_have_started; a start-up probe's skipped late and a recovery's run.
// Which one is the slot's outcome must not depend on which node answered
// first, how the stores sort equal scores, or which entry a loop met
// first: an order like that once let a backfill run a slot whose body
// may already have run. So entries are ordered by Compare, a total order
// whose first key is the entry's Evidence — what it says about whether
// the job body was invoked — and Join is the larger of two entries.
//
// Proof sketch. Compare is a total order on entries (its last keys are
// every field of the entry, so two entries compare equal only when they
// are equal). The maximum under a total order is commutative,
// associative and idempotent, so Join is the join of a semilattice and
// JoinAll's result does not depend on the entries' order or on
// duplicates. Evidence is Compare's first key, so an entry that says the
// body ran or may have run is never outranked by one that says it did
// not: the join of a slot's entries is "did not run" only when every
// entry says so.

// Evidence is what an entry says about whether the slot's job body was
// invoked, in rising order: each level outranks every level below it.
type Evidence int

const (
	// NotRun: nobody ran the slot and no rule chose not to — missed
	// (not may_have_started) or skipped late (a misfire the skip policy
	// dropped). The only evidence backfill runs a slot on.
	NotRun Evidence = iota
	// NotRunByRule: the slot did not run because a rule said so — an
	// operator's pause, overlap forbid or replace, or any skip reason
	// other than late.
	NotRunByRule
	// MayHaveRun: a replica won the slot and stopped before confirming
	// that the body began (missed with may_have_started).
	MayHaveRun
	// RanUnfinished: the body began and its run never ended (abandoned).
	RanUnfinished
	// Ran: the run's own end (succeeded, failed, canceled).
	Ran
)

// String names the level, as backfill's dry run explains a refusal.
func (v Evidence) String() string {
	switch v {
	case NotRun:
		return "did not run"
	case NotRunByRule:
		return "did not run by rule"
	case MayHaveRun:
		return "may have run"
	case RanUnfinished:
		return "ran, never ended"
	case Ran:
		return "ran"
	}
	return "unknown"
}

// Evidence says what e tells about the slot's body.
func (e Entry) Evidence() Evidence {
	switch e.Outcome {
	case OutcomeSucceeded, OutcomeFailed, OutcomeCanceled:
		return Ran
	case OutcomeAbandoned:
		return RanUnfinished
	case OutcomeMissed:
		if e.MayHaveStarted {
			return MayHaveRun
		}
		return NotRun
	case OutcomeSkipped:
		if e.MayHaveStarted {
			return MayHaveRun
		}
		if e.Reason == ReasonLate {
			return NotRun
		}
		return NotRunByRule
	}
	// An outcome this version does not know was written by a newer one:
	// it may say the body ran, so it is read as the strongest claim.
	return Ran
}

// Backfillable reports whether a slot whose join is e may be run by a
// backfill: only when it plainly did not run (NotRun).
func (e Entry) Backfillable() bool { return e.Evidence() == NotRun }

// Compare orders entries of one slot by evidence, then by every field, so
// that it is a total order: the join (the larger) is the same whatever
// the order the entries come in.
func Compare(a, b Entry) int {
	if c := cmp.Compare(a.Evidence(), b.Evidence()); c != 0 {
		return c
	}
	return cmp.Or(
		cmp.Compare(a.Outcome, b.Outcome),
		cmp.Compare(a.Reason, b.Reason),
		compareBool(a.MayHaveStarted, b.MayHaveStarted),
		compareBool(a.Recovered, b.Recovered),
		strings.Compare(a.RunID, b.RunID),
		cmp.Compare(a.Token, b.Token),
		strings.Compare(a.Replica, b.Replica),
		cmp.Compare(a.Attempts, b.Attempts),
		cmp.Compare(a.DurationMS, b.DurationMS),
		strings.Compare(a.ErrorClass, b.ErrorClass),
		strings.Compare(a.BySlot, b.BySlot),
		strings.Compare(a.SettledBy, b.SettledBy),
		strings.Compare(a.SettleID, b.SettleID),
		strings.Compare(a.Slot, b.Slot),
	)
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// Join is the outcome of a slot that has entries a and b: the one with
// the stronger evidence (Compare).
func Join(a, b Entry) Entry {
	if Compare(b, a) > 0 {
		return b
	}
	return a
}

// JoinAll is the join of entries, false when there are none.
func JoinAll(entries []Entry) (Entry, bool) {
	if len(entries) == 0 {
		return Entry{}, false
	}
	out := entries[0]
	for _, e := range entries[1:] {
		out = Join(out, e)
	}
	return out, true
}

// Source names who wrote e, for an operator asking which entry decided a
// slot: the run and its replica, the settler, the newer slot that took
// over; "" when the entry names nobody (a reconciler's verdict).
func (e Entry) Source() string {
	var parts []string
	if e.RunID != "" {
		parts = append(parts, "run "+e.RunID)
	}
	if e.Replica != "" {
		parts = append(parts, "replica "+e.Replica)
	}
	if e.SettledBy != "" {
		parts = append(parts, "settled by "+e.SettledBy)
	}
	if e.BySlot != "" {
		parts = append(parts, "by slot "+e.BySlot)
	}
	if e.Recovered {
		parts = append(parts, "recovered")
	}
	return strings.Join(parts, ", ")
}
