package history

import (
	"context"
	"fmt"
	"time"
)

// The slot timeline (the status page, /api/v1/jobs/{job}/slots): every
// nominal slot of a job in a window, joined with its history entry. A slot
// without an entry is running (a claim of it is open), pending (in the
// future, or too recent for the reconciler to have judged it) or
// unrecorded (old enough to be judged, and not yet: the reconciler is off,
// behind, or the slot is from before the fleet ran these definitions).

// Timeline states of a slot without a history entry; a slot with one has
// its entry's outcome as its state.
const (
	SlotPending    Outcome = "pending"
	SlotRunning    Outcome = "running"
	SlotUnrecorded Outcome = "unrecorded"
)

// MaxWindowSlots bounds the slots one ReadSlots call lists: a window that
// holds more lists its newest MaxWindowSlots (Slots.Truncated).
const MaxWindowSlots = 10_000

// SlotWindow is the window ReadSlots lists.
type SlotWindow struct {
	Since, Until time.Time // slots in [Since, Until]
	Now          time.Time // what is pending is judged at Now
	// SettleAfter is how old a slot without an entry must be before it is
	// unrecorded rather than pending: the reconciler's delay for the job
	// plus its interval (scheduler.Scheduler.SettleAfter).
	SettleAfter time.Duration
	Max         int // at most this many slots, the newest; 0 or above MaxWindowSlots: MaxWindowSlots
}

// Slots is a job's timeline over a window.
type Slots struct {
	Job   string    `json:"job"`
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
	// Truncated is set when the window holds more slots than were listed:
	// the list starts at its first slot, after Since (ask again with Until
	// before it for older ones).
	Truncated bool       `json:"truncated"`
	Slots     []SlotView `json:"slots"` // oldest first
}

// SlotView is one nominal slot and what became of it.
type SlotView struct {
	Slot  string  `json:"slot"`            // RFC 3339 UTC
	State Outcome `json:"state"`           // the entry's outcome, or pending, running, unrecorded
	Entry *Entry  `json:"entry,omitempty"` // the slot's history entry, if any
}

// ReadSlots lists spec's nominal slots in w, newest MaxWindowSlots at
// most, each with its history entry, reading the history and the open
// claims from the stores.
func ReadSlots(ctx context.Context, store Store, job Job, w SlotWindow) (Slots, error) {
	spec := job
	out := Slots{Job: spec.Name, Since: w.Since.UTC(), Until: w.Until.UTC(), Slots: []SlotView{}}
	if w.Until.Before(w.Since) {
		return out, fmt.Errorf("history: slots of %s: the window ends (%s) before it starts (%s)",
			spec.Name, w.Until.Format(time.RFC3339), w.Since.Format(time.RFC3339))
	}
	n := w.Max
	if n <= 0 || n > MaxWindowSlots {
		n = MaxWindowSlots
	}
	if spec.Schedule == nil {
		return out, nil
	}
	slots, truncated := newestSlots(spec.Schedule, w.Since, w.Until, n)
	out.Truncated = truncated
	if len(slots) == 0 {
		return out, nil
	}
	// The log is read newest first from the window's first slot: entries
	// after the window come first and count against the limit.
	after := len(SlotsBetween(spec.Schedule, w.Until, later(w.Now, w.Until), historyReadCeiling))
	entries, err := ReadEntries(ctx, store, spec.Name, slots[0], 2*len(slots)+after+100)
	if err != nil {
		return out, err
	}
	bySlot := make(map[string]*Entry, len(entries))
	for i := range entries {
		bySlot[entries[i].Slot] = &entries[i]
	}
	claims, err := store.ReadClaims(ctx, spec.Name)
	if err != nil {
		return out, err
	}
	open := ClaimedSlots(claims)
	out.Slots = make([]SlotView, len(slots))
	for i, t := range slots {
		s := slotString(t)
		v := SlotView{Slot: s, Entry: bySlot[s]}
		switch {
		case v.Entry != nil:
			v.State = v.Entry.Outcome
		case open[t.Unix()]:
			v.State = SlotRunning
		case w.Now.Sub(t) < w.SettleAfter:
			v.State = SlotPending
		default:
			v.State = SlotUnrecorded
		}
		out.Slots[i] = v
	}
	return out, nil
}

// historyReadCeiling bounds the history entries read past a window that
// ends before now (the stores keep at most 100,000 per job).
const historyReadCeiling = 100_000

// newestSlots returns sched's newest slots in [since, until], at most n,
// oldest first, and whether the window holds more. It never computes more
// than a bounded number of slots (about 30 n), whatever the window's
// length: when the window holds more than n, it looks for the start of
// the newest n by probing back from until, with a span learned from the
// window's first n slots.
func newestSlots(sched Schedule, since, until time.Time, n int) ([]time.Time, bool) {
	first := slotsIn(sched, since, until, n+1, nil)
	if len(first) <= n {
		return first, false
	}
	// More than n (so whatever is returned is truncated): the newest n
	// start somewhere after since. A span that
	// held n+1 slots at the start is a first guess; double it while it holds
	// too few, halve it while it holds too many (bisecting once bounded).
	span := first[n].Sub(first[0])
	var lo, hi time.Duration // lo held too few slots, hi too many (0: unknown)
	var best []time.Time
	ring := make([]time.Time, 0, n)
	for range 24 {
		start := until.Add(-span)
		if !start.After(since) {
			start, span = since, until.Sub(since)
		}
		got, ok := newestIn(sched, start, until, n, 4*n, ring[:0])
		switch {
		case !ok: // far more than n: narrower
			hi = span
		case len(got) >= n || start.Equal(since):
			return append([]time.Time(nil), got...), true
		default: // fewer than n: wider, keeping the best so far
			best = append(best[:0], got...)
			lo = span
		}
		switch {
		case hi == 0:
			span *= 2
		case lo == 0:
			span /= 2
		default:
			span = lo + (hi-lo)/2
		}
		if span < time.Second {
			break
		}
	}
	if len(best) == 0 {
		return first[:n], true // a schedule too irregular to probe: the window's first n
	}
	return best, true
}

// slotsIn appends to out sched's slots in [since, until], at most n.
func slotsIn(sched Schedule, since, until time.Time, n int, out []time.Time) []time.Time {
	for t := sched.Next(since.Add(-time.Nanosecond)); !t.IsZero() && !t.After(until) && len(out) < n; t = sched.Next(t) {
		out = append(out, t)
	}
	return out
}

// newestIn returns the newest n of sched's slots in [since, until], oldest
// first, computing at most limit slots (false when the window holds more).
// ring is reused as the buffer.
func newestIn(sched Schedule, since, until time.Time, n, limit int, ring []time.Time) ([]time.Time, bool) {
	count, head := 0, 0
	for t := sched.Next(since.Add(-time.Nanosecond)); !t.IsZero() && !t.After(until); t = sched.Next(t) {
		if count++; count > limit {
			return nil, false
		}
		if len(ring) < n {
			ring = append(ring, t)
			continue
		}
		ring[head] = t
		head = (head + 1) % n
	}
	if len(ring) < n || head == 0 {
		return ring, true
	}
	ordered := make([]time.Time, 0, n)
	return append(append(ordered, ring[head:]...), ring[:head]...), true
}

// SlotsBetween lists sched's slots in (from, to], at most n, oldest first.
func SlotsBetween(sched Schedule, from, to time.Time, n int) []time.Time {
	var out []time.Time
	for t := sched.Next(from); !t.IsZero() && !t.After(to) && len(out) < n; t = sched.Next(t) {
		out = append(out, t)
	}
	return out
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
