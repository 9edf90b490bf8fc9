package history

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// ReadEntries returns job's recorded slot outcomes with a slot at since or
// later, newest first, at most limit: what a majority of the stores holds,
// one entry per slot: the join of its entries (Join).
func ReadEntries(ctx context.Context, store Store, job string, since time.Time, limit int) ([]Entry, error) {
	var from int64
	if !since.IsZero() {
		from = since.Unix()
	}
	// A slot rarely has two entries; read a little more so that limit
	// slots remain after joining them, and more again while the read came
	// back full with no more than limit slots: its oldest slot may have
	// entries the read cut off, and the join of some of them is not the
	// slot's outcome.
	for n := limit + min(limit, readSlack); ; n *= 2 {
		entries, err := store.ReadLog(ctx, job, from, n)
		if err != nil {
			return nil, err
		}
		out, err := joinBySlot(job, entries)
		if err != nil {
			return nil, err
		}
		switch {
		case len(out) > limit:
			return out[:limit], nil
		case len(entries) < n || n >= maxRead:
			return out, nil
		}
	}
}

// joinBySlot joins the entries of each slot of a log read newest first
// (a slot's entries are adjacent).
func joinBySlot(job string, entries []locking.LogEntry) ([]Entry, error) {
	out := make([]Entry, 0, len(entries))
	for _, le := range entries {
		e, ok := ParseEntry(le)
		if !ok {
			return nil, fmt.Errorf("history: %s: entry %q is not a slot outcome", job, le.Value)
		}
		if n := len(out); n > 0 && out[n-1].Slot == e.Slot {
			out[n-1] = Join(out[n-1], e)
			continue
		}
		out = append(out, e)
	}
	return out, nil
}

// maxRead bounds the entries one ReadEntries call reads.
const maxRead = 1 << 16

// readSlack bounds the extra entries ReadEntries reads.
const readSlack = 64

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
	if err := CheckTime(t); err != nil {
		return time.Time{}, fmt.Errorf("%q: %w", s, err)
	}
	return t, nil
}

// CheckTime refuses a time given as a window's bound that is before 1970
// (the Unix epoch): no slot is that old, and the zero time
// (0001-01-01T00:00:00Z), which Go code reads as "unset", must not pass
// for "no bound" when it was written.
func CheckTime(t time.Time) error {
	if t.Before(time.Unix(0, 0)) {
		return errors.New("before 1970-01-01T00:00:00Z: no slot is that old")
	}
	return nil
}
