package scheduler

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"

	"github.com/slotlock/slotlock/locking"
)

// Outcomes a crash may have kept out of the logs. A replica that skips a
// slot it won writes the slot's entry and then logs slot.skipped (end.go:
// what the log reports is on the stores). Killed between the two, it
// leaves the outcome in the history only, and the logs, the audit trail,
// no word of the slot. The write and the line cannot be one step; the
// reconciler, which judges each slot once, reports such a skip again when
// the heartbeats show that its writer never beat after writing it
// (history.AfterWrite). The price is a second line, with the same
// outcome, for a skip whose writer did log it in the last second or so
// of its life; the line says so.

// unloggedNote is the note of a skip reported again.
const unloggedNote = "reported by the reconciler from the slot history: the replica that skipped it never beat again " +
	"after writing it, and may have stopped before logging it"

// unlogged reports again the skips among log's entries (newest first) of
// slots whose writers may have died before logging them, and returns the
// slots the pass may judge now: those before the first whose writer may
// still beat (judged at a later pass).
func (p *pass) unlogged(ctx context.Context, j *job, log []locking.LogEntry, slots []time.Time) ([]time.Time, error) {
	written := writtenSkips(log, slots[0].Unix(), slots[len(slots)-1].Unix())
	if len(written) == 0 {
		return slots, nil // the common case: no skip written by a replica
	}
	fleet, err := p.readFleet(ctx)
	if err != nil {
		return nil, err
	}
	now := p.r.clock.Now()
	var silent []scoredEntry
	for _, w := range written { // oldest first
		switch fleet.AfterWrite(w.e.Replica, time.UnixMilli(w.e.WrittenMS), now) {
		case history.WriterMayBeat:
			p.reportUnlogged(j, silent)
			held := slices.IndexFunc(slots, func(t time.Time) bool { return t.Unix() >= w.score })
			return slots[:held], nil
		case history.WriterSilent:
			silent = append(silent, w)
		}
	}
	p.reportUnlogged(j, silent)
	return slots, nil
}

// scoredEntry is a history entry and its slot's time (its score).
type scoredEntry struct {
	score int64
	e     history.Entry
}

// writtenSkips returns log's entries of slots in [first, last] that a
// replica skipped and timed (WrittenMS), oldest first.
func writtenSkips(log []locking.LogEntry, first, last int64) []scoredEntry {
	var out []scoredEntry
	for _, le := range log {
		if le.Score < first || le.Score > last {
			continue
		}
		e, ok := history.ParseEntry(le)
		if ok && e.Outcome == history.OutcomeSkipped && e.Replica != "" && e.WrittenMS != 0 {
			out = append(out, scoredEntry{le.Score, e})
		}
	}
	slices.SortStableFunc(out, func(a, b scoredEntry) int { return cmp.Compare(a.score, b.score) })
	return out
}

// reportUnlogged logs the skips in es again, as their writers would have.
func (p *pass) reportUnlogged(j *job, es []scoredEntry) {
	for _, w := range es {
		attrs := []any{"skipped_by", w.e.Replica}
		if w.e.BySlot != "" {
			attrs = append(attrs, "by_slot", w.e.BySlot)
		}
		p.r.skipped(j.name(), w.e.Slot, w.e.Reason, 1, append(attrs, "note", unloggedNote)...)
	}
}
