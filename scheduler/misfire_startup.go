package scheduler

import (
	"time"
)

// The start-up check: slots that passed while no replica ran them, found
// from the job's record when a replica starts, go to the misfire policy
// (misfire.go).

// startupCheck looks, once per job at Run's start, for slots that passed
// while no replica ran them: slots after the job's record that were due by
// the start (the loop fires those due after it).
// It hands them to the misfire policy once every replica that could still
// fire one of them normally (clocks up to MaxClockSkew behind, up to
// Lateness late) has tried it.
func (m *misfire) startupCheck(j *job, start time.Time) {
	name := j.name()
	// Read the record now, before this replica's own runs move it.
	rec, err := m.records.readRecord(name)
	if err != nil {
		m.log.Debug("missed slot check: record unreadable", "event", evMisfireCheck, "job", name, "error", err.Error())
		return
	}
	if rec == 0 {
		return // never ran: nothing can have been missed
	}
	// A slot due by the start under this replica's jitter may be due
	// after it for a replica with a larger one, which still fires it.
	last := j.lateSpec().lastDueBy(start)
	if last.IsZero() || last.Unix() <= rec {
		return
	}
	late := countSlots(j.spec.Schedule, time.Unix(rec, 0), last)
	if late.count == 0 {
		return
	}
	// Decide only once every replica that could fire these slots normally
	// has tried: the claim then tells handled from missed.
	if !m.sleep(start.Add(m.recoverAfter()).Sub(m.clock.Now()), m.stopping) {
		return
	}
	// Under skip, the latest slot is claimed first (probeLate), so that N
	// replicas starting together log the miss once: the one that wins it.
	if m.recoverLate(j, late) {
		return
	}
	switch m.attempts.probeLate(j, late.last) {
	case probeMissed:
		m.logLate(name, late, lateNote(j))
	case probePaused:
		// The latest slot was logged paused. The older ones passed while
		// no replica ran, and no replica that fired them logged them:
		// they are logged late here, by every replica the pause refused
		// (the pause refuses each, so none wins them to log them once).
		if rest, ok := late.older(j.spec.Schedule); ok {
			m.logLate(name, rest, olderThanPausedNote)
		}
	}
}

// olderThanPausedNote is why a start-up check logs late the slots missed
// before one the job's pause covers.
const olderThanPausedNote = "older missed slots, while no replica ran: misfire policy skip does not run them " +
	"(the latest, which the job's pause covers, is logged paused)"

// prevSlot returns the latest slot <= t, or zero when none in five years.
func prevSlot(sched Schedule, t time.Time) time.Time {
	for _, w := range []time.Duration{time.Minute, time.Hour, 25 * time.Hour, 32 * 24 * time.Hour,
		367 * 24 * time.Hour, 5 * 367 * 24 * time.Hour} {
		var last time.Time
		n := 0
		for x := sched.Next(t.Add(-w)); !x.IsZero() && !x.After(t) && n < 1_000_000; x = sched.Next(x) {
			last = x
			n++
		}
		if !last.IsZero() {
			return last
		}
	}
	return time.Time{}
}

// countSlots describes the slots in (after, upto]; upto must be a slot.
func countSlots(sched Schedule, after, upto time.Time) lateRange {
	var r lateRange
	for x := sched.Next(after); !x.IsZero() && !x.After(upto); x = sched.Next(x) {
		if r.count >= maxCatchUp {
			r.atLeast = true
			r.prev, r.last = time.Time{}, upto
			break
		}
		r.add(x)
	}
	return r
}
