package scheduler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// The slot history as the last word on "did this slot already run?". A
// won claim of a slot proves that no replica handled it only while every
// replica's done marker of the slot still stands: markerSafe after the
// nominal slot. A claim won later — a jittered slot whose offset was
// raised while older replicas, without it, ran the slot on time (their
// markers live only doneTTL); a recovered slot under run_all or run_once
// whose markers a replica with other settings wrote; a backfill — asks
// the history, whose entry is written with the marker and outlives it.

// Errors of the history check.
var (
	// ErrNoHistory: the stores keep no slot history (HistoryKeep < 0), so
	// a slot whose done marker expired cannot be told from one that never
	// ran.
	ErrNoHistory = errors.New("scheduler: no slot history is kept (history.keep 0)")
	// errHistoryShort: the history is full back to the slot and may have
	// dropped the slot's entry: it cannot tell.
	errHistoryShort = errors.New("scheduler: the slot history no longer reaches the slot")
)

// markerSafe is how long after slot T a won claim of T still proves, by
// itself, that no replica handled T: a replica ran T no earlier than T on
// a clock up to MaxClockSkew ahead of this one, and its done marker lives
// doneTTL (every replica's base lifetime: more with jitter or a misfire
// policy that recovers) from the run's end; a second less for the
// Acquire that found the key free.
func (s *Scheduler) markerSafe() time.Duration {
	return s.doneTTL - s.cfg.MaxClockSkew - acquireSlack
}

// slotRecorded returns the history entry of slot t of job (the one that
// takes precedence when it has several), found false when it has none. It
// reads the log from t's score on, newest first: a few entries first (the
// slot is recent: the common case), more while the entries read are all
// newer than t. errHistoryShort when the log holds HistoryKeep entries or
// more from t on and none of t: t's may have been trimmed.
func (s *Scheduler) slotRecorded(ctx context.Context, job string, t time.Time) (history.Entry, bool, error) {
	keep := s.cfg.HistoryKeep
	if keep <= 0 {
		return history.Entry{}, false, ErrNoHistory
	}
	score := t.Unix()
	for n := min(8, keep+1); ; n = min(8*n, keep+1) {
		s.inflight <- struct{}{}
		log, err := s.cfg.Locker.ReadLog(ctx, job, score, n)
		<-s.inflight
		if err != nil {
			return history.Entry{}, false, err
		}
		e, found, err := entryOf(job, log, score)
		if err != nil || found {
			return e, found, err
		}
		if len(log) >= keep {
			return history.Entry{}, false, errHistoryShort
		}
		if len(log) < n {
			return history.Entry{}, false, nil // every entry from t on was read
		}
	}
}

// entryOf returns the entry of the slot with the given score in log (one
// per slot, by history.Entry.Overrules).
func entryOf(job string, log []locking.LogEntry, score int64) (history.Entry, bool, error) {
	var out history.Entry
	found := false
	for _, le := range log {
		if le.Score != score {
			continue
		}
		e, ok := history.ParseEntry(le)
		if !ok {
			return history.Entry{}, false, fmt.Errorf("scheduler: history of %s: entry %q is not a slot outcome", job, le.Value)
		}
		if !found || e.Overrules(out) {
			out, found = e, true
		}
	}
	return out, found, nil
}
