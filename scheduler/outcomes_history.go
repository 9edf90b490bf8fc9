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
func (e *engine) markerSafe() time.Duration {
	return e.doneTTL - e.cfg.MaxClockSkew - acquireSlack
}

// slotRecorded returns the outcome of slot t of job in the history (the
// join of its entries), found false when it has none. It reads the log
// from t's score on, newest first: a few entries first (the slot is
// recent: the common case), more while the read was cut short — t's
// entries are the oldest read, so a read that returned as many as it
// asked may have left some of them out, and the join of the ones read is
// not the slot's. errHistoryShort when the log holds HistoryKeep entries
// or more from t on and none of t: t's may have been trimmed.
func (o *outcomes) slotRecorded(ctx context.Context, job string, t time.Time) (history.Entry, bool, error) {
	keep := o.cfg.HistoryKeep
	if keep <= 0 {
		return history.Entry{}, false, ErrNoHistory
	}
	score := t.Unix()
	limit := historyReadLimit(keep)
	for n := min(8, limit); ; n = min(8*n, limit) {
		o.inflight <- struct{}{}
		log, err := o.cfg.Locker.ReadLog(ctx, job, score, n)
		<-o.inflight
		if err != nil {
			return history.Entry{}, false, err
		}
		complete := len(log) < n // every entry from t on was read
		e, found, err := entryOf(job, log, score)
		switch {
		case err != nil:
			return history.Entry{}, false, err
		case found && (complete || n == limit):
			return e, true, nil
		case !found && len(log) >= keep:
			return history.Entry{}, false, errHistoryShort
		case complete:
			return history.Entry{}, false, nil
		}
	}
}

// historyReadLimit is how many entries a read of a job's log may ask for
// to see all that a majority holds: each node keeps keep, and the union
// of several may hold a few more.
func historyReadLimit(keep int) int { return 2*keep + historyReadSlack }

// historyReach is the oldest slot score whose lack of an entry a log read
// from some score on (newest first) can tell: 0 when it tells them all.
// Each node keeps its newest keep entries, so a slot that keep entries
// read are as new as or newer than may have had its entry trimmed on the
// node a reader's majority shares with the writer's.
func historyReach(log []locking.LogEntry, keep int) int64 {
	if len(log) < keep {
		return 0
	}
	return log[keep-1].Score + 1
}

// historyReadSlack: the entries a union of nodes holds beyond 2×keep.
const historyReadSlack = 64

// entryOf returns the outcome of the slot with the given score in log:
// the join of its entries (history.JoinAll).
func entryOf(job string, log []locking.LogEntry, score int64) (history.Entry, bool, error) {
	var entries []history.Entry
	for _, le := range log {
		if le.Score != score {
			continue
		}
		e, ok := history.ParseEntry(le)
		if !ok {
			return history.Entry{}, false, fmt.Errorf("scheduler: history of %s: entry %q is not a slot outcome", job, le.Value)
		}
		entries = append(entries, e)
	}
	e, found := history.JoinAll(entries)
	return e, found, nil
}
