package scheduler

import (
	"strconv"
	"time"
)

// misfire.policy run_all: every missed slot no older than misfire.deadline
// (counted from its due time) runs once — the newest misfire.max of them,
// so that run_all with max 1 is run_once, oldest first, one at a time on
// this replica (job.recovering). Each goes through recover like run_once's
// slot: it waits until every replica that could fire it normally has
// tried, checks the deadline again (a slot whose turn comes too late is
// logged late), and claims the slot under its own nominal time and the
// normal locks (the job lease under forbid). A slot that any replica
// handled is never run again: its claim is open, or its done marker (kept
// past the deadline for run_all jobs) stands, or — once a marker of a
// replica with other settings may have expired — the slot history records
// it (recorded.go). Replicas that recover the same slots race for each
// claim; the loser waits on it (a claim held, not yet done) before it
// moves on, so the fleet, too, runs them one after the other.

// recoverAll runs the slots of late that run_all takes, and logs the ones
// it leaves (older than the deadline, or beyond misfire.max) as late when
// logRest is set. It returns false, having done nothing, when no slot of
// late is within the deadline: the caller then reports them as run_once
// does.
func (s *Scheduler) recoverAll(j *job, late lateRange, logRest bool) bool {
	if late.count == 0 {
		return false
	}
	picked, before := s.pickMissed(j, late)
	if len(picked) == 0 {
		return false
	}
	if rest := late.count - len(picked); logRest && (rest > 0 || late.atLeast) && !before.IsZero() {
		s.logLate(j.name(), lateRange{first: late.first, last: before, count: max(rest, 1), atLeast: late.atLeast},
			"older missed slots: run_all runs the newest "+strconv.Itoa(j.spec.Misfire.Max)+
				" (misfire.max) that are within the misfire deadline")
	}
	// One recovery sequence at a time on this replica: a later one (this
	// replica paused again) starts with its oldest slot once this one is
	// over, and its slots that passed the deadline meanwhile are late.
	j.recovering.Lock()
	defer j.recovering.Unlock()
	for _, t := range picked {
		if s.isStopping() {
			return true
		}
		s.recover(j, t)
	}
	return true
}

// pickMissed returns the slots of late that run_all runs — those due no
// longer than the deadline ago, the newest Max of them, oldest first —
// and the slot of late just before the first of them (zero when none).
func (s *Scheduler) pickMissed(j *job, late lateRange) (picked []time.Time, before time.Time) {
	now := s.clock.Now()
	sched, dl, n := j.spec.Schedule, j.spec.Misfire.Deadline, j.spec.Misfire.Max
	// Due times are at most Jitter after their slots: no slot before this
	// can be within the deadline.
	from := now.Add(-dl - max(j.spec.Jitter, 0) - time.Second)
	if f := late.first.Add(-time.Second); f.After(from) {
		from = f
	}
	ring := make([]time.Time, 0, n)
	head, total := 0, 0
	for t := sched.Next(from); !t.IsZero() && !t.After(late.last) && total < maxCatchUp; t = sched.Next(t) {
		if t.Before(late.first) || now.Sub(j.spec.Due(t)) > dl {
			before = t
			continue
		}
		total++
		if len(ring) < n {
			ring = append(ring, t)
			continue
		}
		before = ring[head] // dropped: older than the newest n
		ring[head] = t
		head = (head + 1) % n
	}
	picked = append(append(picked, ring[head:]...), ring[:head]...)
	if len(picked) > 0 && before.IsZero() && picked[0].After(late.first) {
		// Slots of late before the walk's start: the one just before
		// the first picked is the latest of them.
		before = prevSlot(sched, picked[0].Add(-time.Second))
	}
	return picked, before
}

// recoverOutage recovers, when the stores answer again, the slots of j
// that this replica skipped with no_quorum, first to last: run_once the
// latest, run_all the range (without logging its older slots as late
// again: each was logged with no_quorum).
func (s *Scheduler) recoverOutage(j *job, first, last time.Time) {
	if j.spec.Misfire.Policy == MisfireRunOnce {
		// Replicas whose clocks differ end an outage with different latest
		// missed slots (a slow clock has not fired the outage's last slot
		// yet): each raises the job's record of the latest one, and
		// recover runs a run_once slot only if none later was missed.
		s.noteMissed(j, last)
	}
	if j.spec.Misfire.Policy == MisfireRunAll && !first.IsZero() {
		if s.recoverAll(j, countSlots(j.spec.Schedule, first.Add(-time.Second), last), false) {
			return
		}
	}
	s.recover(j, last)
}
