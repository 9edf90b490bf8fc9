package scheduler_test

import (
	"fmt"
	"time"
)

// What the checker knows of the job pauses the operators wrote: whether a
// slot was paused, surely, maybe or not.

type pauseState int

const (
	notPaused pauseState = iota
	pausedMaybe
	pausedSurely
)

// pausedAt says whether job was paused at slot s. The newest pause
// written replaces the older ones (the register keeps the newest), so the
// pause in force is the last one written before s. Surely paused: that one
// was confirmed, covers s with a margin (the writes, clock offsets and the
// lateness bound), and no other pause write of the job was under way near
// s; maybe: near a pause's edges or writes, or under an unconfirmed one.
func (w *world) pausedAt(job string, s time.Time, lateness time.Duration) pauseState {
	w.mu.Lock()
	defer w.mu.Unlock()
	margin := w.cfg.skew + lateness + time.Second
	var last *pauseRec
	near := false
	for i := range w.pauses {
		p := &w.pauses[i]
		if p.job != job {
			continue
		}
		// A write's pause holds from its Version, the writer's clock when it
		// wrote (up to half the skew off), and replicas judge a slot's due
		// time by theirs: a write begun up to margin after s may cover s,
		// whether it was acknowledged or its outcome is unknown.
		if !p.from.After(s.Add(margin)) && !p.acked.Before(s.Add(-margin)) || p.failed && !p.from.After(s.Add(margin)) && w.mayHold(i, s.Add(-margin)) {
			near = true // a write under way around s, or one whose outcome is unknown
		}
		if !p.from.After(s) && (last == nil || p.from.After(last.from)) {
			last = p
		}
	}
	switch {
	case last == nil || s.After(last.until.Add(margin)):
		if near {
			return pausedMaybe
		}
		return notPaused
	case near || last.failed || !s.Before(last.until.Add(-margin)) || !s.After(last.acked.Add(margin)):
		return pausedMaybe
	}
	return pausedSurely
}

// mayHold reports whether the failed pause write w.pauses[i] may still
// decide work due at s (w.mu held): a pause until its end (it reached some
// stores, and a reader may pass it on, never past its end); a resume until
// the job's next write that was confirmed (written above it on a
// majority). w.pauses is in the order the writes were recorded.
func (w *world) mayHold(i int, s time.Time) bool {
	p := w.pauses[i]
	if p.until.After(p.from) {
		return !s.After(p.until)
	}
	for _, q := range w.pauses[i+1:] {
		// Begun well after p (clock offsets and a second apart): its
		// version is above p's.
		if q.job == p.job && !q.failed && q.from.After(p.from.Add(w.cfg.skew+time.Second)) && q.acked.Before(s) {
			return false
		}
	}
	return true
}

// pausesNear describes the pause writes of job begun within an hour
// before s, for a violation's message.
func (w *world) pausesNear(job string, s time.Time) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := ""
	for _, p := range w.pauses {
		if p.job == job && !p.from.After(s) && p.from.After(s.Add(-time.Hour)) {
			out += fmt.Sprintf("[from %s acked %s until %s failed %v] ", p.from.Sub(w.start), p.acked.Sub(w.start),
				p.until.Sub(w.start), p.failed)
		}
	}
	return out
}
