package smallworld

import (
	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// The product's rules for reading a slot's outcome, as the scheduler
// calls them: every program of the world decides through these, so that a
// change in them is a change in the world the checker explores. They are
// in a file of their own so that running the checker on an older commit
// of the product (a regression hunt) swaps this one file for that
// commit's rules (testdata/prefix/, and docs/guarantees.md).

// joinOf is the outcome of a slot whose stored entries (as read: newest
// first, equal scores by value) are values: scheduler's entryOf, the join
// of the entries (history.JoinAll).
func joinOf(values []string) (history.Entry, bool) {
	var entries []history.Entry
	for _, v := range values {
		if e, ok := history.ParseEntry(locking.LogEntry{Value: v}); ok {
			entries = append(entries, e)
		}
	}
	return history.JoinAll(entries)
}

// backfillable is scheduler's backfillable: may a backfill run a slot
// whose outcome is e (found false: no entry)?
func backfillable(e history.Entry, found bool) bool {
	return !found || e.Backfillable()
}

// recordsRun is closeRecorded's test: the history records the run of
// the claim ab taken over at least as strongly as settling it would
// (started: abandoned, else may_have_started), or the claim is
// unconfirmed and the history records a run's own end — and it is not a
// settler's verdict while the claim stood on a majority (that settler's
// end reached a minority: it never reported).
func recordsRun(e history.Entry, found bool, ab *locking.Abandoned) bool {
	settled := history.MayHaveRun
	if ab.Started {
		settled = history.RanUnfinished
	}
	ours := e.RunID == ab.ID || (!ab.Started && e.Evidence() == history.Ran)
	unreported := e.SettledBy != "" && ab.Majority
	return found && ours && e.Evidence() >= settled && !unreported
}

// closeRecordedOn: the settler reads the history before it settles a
// claim taken over (scheduler's closeRecorded).
const closeRecordedOn = true

// evidence ranks a stored entry by what it says about the body
// (history.Entry.Evidence): the invariants' "final outcome" is the one
// every reader of the history computes.
func evidence(value string) int { return int(parsed(value).Evidence()) }

// historyReach is the scheduler's (recorded.go), which is unexported: the
// oldest slot score whose lack of an entry a log read from some score on
// can tell (0: all of them).
func historyReach(log []locking.LogEntry, keep int) int64 {
	if len(log) < keep {
		return 0
	}
	return log[keep-1].Score + 1
}
