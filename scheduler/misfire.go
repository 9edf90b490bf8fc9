package scheduler

import (
	"context"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// Misfires reach the policy three ways:
//
//   - the loop woke later than the lateness bound (this replica was paused
//     or starved): fireDue hands the late slots over;
//   - at start, the job's record shows slots that passed while no replica
//     ran (startupCheck);
//   - slots skipped with no_quorum: when a majority answers again the latest
//     one is recovered under run_once (noteOutage, quorumSeen).
//
// skip logs the missed slots once, as slot.skipped reason late. run_once
// runs the latest one if it is within the deadline and no replica handled
// it: its done marker (or lock), which for run_once jobs lives past the
// deadline, is checked by acquiring the slot lock (and, once the marker of
// a replica with other settings may have expired, the slot history:
// recorded.go). run_all runs every missed slot within the deadline, the
// newest misfire.max of them, oldest first (misfire_all.go).

// misfire applies j's misfire policy to the slots in late. probe is set for
// slots found at start: then the skip policy first checks, by claiming the
// latest slot (probeLate), that no replica handled it, so that N replicas
// starting together log the miss once (the one that wins the claim).
func (s *Scheduler) misfire(j *job, late lateRange, probe bool) {
	name := j.name()
	if j.spec.Misfire.Policy == MisfireRunAll && s.recoverAll(j, late, true) {
		return
	}
	if j.spec.Misfire.Policy == MisfireRunOnce && s.clock.Now().Sub(j.spec.Due(late.last)) <= j.spec.Misfire.Deadline {
		if late.count > 1 {
			rest := late
			rest.count--
			rest.last = late.prev
			s.logLate(name, rest, "older missed slots: run_once runs only the latest")
		}
		s.recover(j, late.last)
		return
	}
	if probe && !s.probeLate(j, late.last) {
		return
	}
	note := "misfire policy skip"
	if j.spec.Misfire.Policy.recovers() {
		note = "older than the misfire deadline"
	}
	s.logLate(name, late, note)
}

// probeLate claims missed slot t of j, as every replica that fired it
// would have, and reports whether t is this replica's to log as skipped
// late: then its claim is closed with the done marker and the history
// entry skipped/late, which the reconciler finds. A slot that is done, or
// claimed by a run going on, is not; nor is one whose claim was abandoned
// (it is settled as such) or found on a minority of the stores, nor one
// the stores cannot be asked about (its slots fire into no_quorum skips).
func (s *Scheduler) probeLate(j *job, t time.Time) bool {
	name, slot := j.name(), slotString(t)
	until := s.clock.Now().Add(time.Second)
	lease, err := s.acquire(name, slotKey(name, t), retryPolicy{splitUntil: until, quorumUntil: until, claim: true})
	if err != nil {
		s.log.Debug("missed slot check: not taken", "event", evMisfireCheck, "job", name, "slot", slot,
			"error", err.Error())
		return false
	}
	if o := lease.Orphan(); o != nil {
		s.spawn(func() { s.settleOrphan(j, o) })
	}
	switch {
	case lease.Abandoned() != nil:
		s.settleAbandoned(j, t, lease)
		return false
	case lease.Leftover():
		s.endLease(name, slot, lease, 0, "")
		s.log.Debug("missed slot check: a claim of the slot is on a minority of the stores", "event", evMisfireCheck,
			"job", name, "slot", slot)
		return false
	case lease.Pause().Covers(j.spec.Due(t)):
		s.endLease(name, slot, lease, 0, "")
		s.pausedSlot(j, t, lease.Pause())
		return false
	}
	// The history check of a fired slot, and its exit when it says no.
	a := s.newAttempt(j, t, originScheduled)
	a.claim = lease
	if v := a.recorded(); v.act != actNext {
		a.exit(v)
		return false
	}
	s.endHandled(pendingEnd{job: name, slot: slot, lease: lease, doneTTL: j.doneTTL, note: ReasonLate, at: t,
		history: &HistoryEntry{Slot: slot, Outcome: OutcomeSkipped, Reason: ReasonLate, Replica: s.cfg.Replica}}, j, t)
	return true
}

func (s *Scheduler) logLate(job string, late lateRange, note string) {
	attrs := []any{"missed", late.count, "note", note}
	if late.count > 1 {
		attrs = append(attrs, "first_slot", slotString(late.first))
	}
	if late.atLeast {
		attrs = append(attrs, "missed_at_least", true)
	}
	s.skipped(job, slotString(late.last), ReasonLate, late.count, attrs...)
}

// recover runs missed slot t of j under run_once or run_all, unless it is
// past the deadline (counted from its due time) or some replica handled it.
func (s *Scheduler) recover(j *job, t time.Time) {
	name := j.name()
	due := j.spec.Due(t)
	// Decide only once every replica that could fire t normally has tried
	// (clocks up to MaxClockSkew behind, up to Lateness late): a slot this
	// replica missed may well be run by a replica with a slower clock, and
	// the slot lock then says so. Half a second more keeps the recovered run
	// off the instant at which a frequent job's next slot fires.
	if !s.sleep(due.Add(s.recoverAfter()).Sub(s.clock.Now()), s.stopping) {
		return
	}
	age := s.clock.Now().Sub(due)
	if age > j.spec.Misfire.Deadline {
		s.logLate(name, lateRange{first: t, last: t, count: 1}, "older than the misfire deadline")
		return
	}
	if j.spec.Misfire.Policy == MisfireRunOnce {
		if later := s.laterMissed(j, t); !later.IsZero() {
			s.logLate(name, lateRange{first: t, last: t, count: 1},
				"a later slot was missed too: run_once runs the latest, "+slotString(later))
			return
		}
	}
	// The slot lock decides: a replica that handled t left its lock or a
	// done marker, and under run_once the marker outlives the deadline
	// (job.doneTTL). The job's record is no help here: it holds only the
	// latest handled slot, which this replica's own runs after t move past
	// t.
	s.attemptSlot(j, t, originRecovered, nil)
}

// missedKey is a job's record of the latest slot a replica skipped for
// want of a quorum (noteMissed), Unix seconds.
func missedKey(job string) locking.Key { return locking.Key{Family: job, Name: "missed"} }

// noteMissed raises job j's record of the latest slot missed in an outage
// to t.
func (s *Scheduler) noteMissed(j *job, t time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	_ = s.cfg.Locker.AdvanceRecord(ctx, missedKey(j.name()), t.Unix())
}

// latestMissed reads j's record of the latest slot missed in an outage
// (zero when never written or unreadable: then recover decides alone).
func (s *Scheduler) latestMissed(j *job) time.Time {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	v, err := s.cfg.Locker.ReadRecord(ctx, missedKey(j.name()))
	if err != nil || v == 0 {
		return time.Time{}
	}
	return time.Unix(v, 0)
}

// laterMissed returns a slot of j after t, up to the job's record of the
// latest slot missed in an outage, that nobody ran on time: it has no
// entry in the history and no open claim, or its entry says it was
// recovered. Then t is not the latest missed slot, and run_once must not
// run it. Zero when every such slot ran on time (or it cannot tell: then
// the slot lock alone decides, as before).
func (s *Scheduler) laterMissed(j *job, t time.Time) time.Time {
	latest := s.latestMissed(j)
	if !latest.After(t) {
		return time.Time{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	var open map[int64]bool
	n := 0
	for u := j.spec.Schedule.Next(t); !u.IsZero() && !u.After(latest) && n < laterMissedScan; u = j.spec.Schedule.Next(u) {
		n++
		e, ok, err := s.slotRecorded(ctx, j.name(), u)
		if err != nil {
			return time.Time{}
		}
		if ok {
			if e.Recovered {
				return u
			}
			continue
		}
		if open == nil {
			claims, err := s.cfg.Locker.ReadClaims(ctx, j.name())
			if err != nil {
				return time.Time{}
			}
			open = claimedSlots(claims)
		}
		if !open[u.Unix()] {
			return u
		}
	}
	return time.Time{}
}

// outageRecovered is run_once's check made while holding slot t's claim
// (and, under forbid, the job lease): replicas whose clocks differ end
// an outage with different latest missed slots, and learn of each other's
// (noteMissed) only when each sees the stores again, which may be after
// another already decided. It returns a slot of the same outage that was
// recovered already, or a later one that was missed, with the note that
// says which; zero when t is still the one to run. The outage reaches from
// t both ways over slots with no run on time (no entry, or a skip), up to
// laterMissedScan slots each way.
func (s *Scheduler) outageRecovered(j *job, t time.Time) (time.Time, string) {
	if later := s.laterMissed(j, t); !later.IsZero() {
		return later, "a later slot was missed too: run_once runs the latest, "
	}
	if s.cfg.HistoryKeep <= 0 {
		return time.Time{}, ""
	}
	// The slots before t, newest first, and after t up to now.
	var before, after []time.Time
	for u := t; len(before) < laterMissedScan; {
		if u = prevSlot(j.spec.Schedule, u.Add(-time.Second)); u.IsZero() {
			break
		}
		before = append(before, u)
	}
	now := s.clock.Now()
	for u := j.spec.Schedule.Next(t); !u.IsZero() && !u.After(now) && len(after) < laterMissedScan; u = j.spec.Schedule.Next(u) {
		after = append(after, u)
	}
	from := t
	if len(before) > 0 {
		from = before[len(before)-1]
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	s.inflight <- struct{}{}
	log, err := s.cfg.Locker.ReadLog(ctx, j.name(), from.Unix(), s.outageReadLimit(j, t, len(before)))
	<-s.inflight
	if err != nil {
		return time.Time{}, "" // cannot tell: the claim alone decides, as before
	}
	if u := recoveredIn(j.name(), log, after); !u.IsZero() {
		return u, "run_once ran a later slot of this outage, "
	}
	if u := recoveredIn(j.name(), log, before); !u.IsZero() {
		return u, "run_once ran an earlier slot of this outage, "
	}
	return time.Time{}, ""
}

// recoveredIn walks slots, nearest to the slot being decided first, over
// the history entries in log: the first one recovered, or zero at the
// first one that ran on time (the outage is on its other side), an
// unreadable entry, or the end.
func recoveredIn(job string, log []locking.LogEntry, slots []time.Time) time.Time {
	for _, u := range slots {
		e, ok, err := entryOf(job, log, u.Unix())
		switch {
		case err != nil:
			return time.Time{}
		case ok && e.Recovered:
			return u
		case ok && e.Outcome != OutcomeSkipped && e.Outcome != OutcomeMissed:
			return time.Time{}
		}
	}
	return time.Time{}
}

// outageReadLimit is how many history entries, newest first, reach back
// over the n slots before t: two a slot (a slot may have a skip and a run
// entry) from the first of them to now, at most what the history keeps.
func (s *Scheduler) outageReadLimit(j *job, t time.Time, n int) int {
	keep := s.cfg.HistoryKeep
	now := s.clock.Now()
	for u := j.spec.Schedule.Next(t); !u.IsZero() && !u.After(now) && n < keep; u = j.spec.Schedule.Next(u) {
		n++
	}
	return min(keep, 2*(n+1)+16)
}

// laterMissedScan bounds the slots laterMissed looks at.
const laterMissedScan = 100

// startupCheck looks, once per job at Run's start, for slots that passed
// while no replica ran them: slots after the job's record that were due by
// the start (the loop fires those due after it).
// It hands them to the misfire policy once every replica that could still
// fire one of them normally (clocks up to MaxClockSkew behind, up to
// Lateness late) has tried it.
func (s *Scheduler) startupCheck(j *job, start time.Time) {
	name := j.name()
	// Read the record now, before this replica's own runs move it.
	rec, err := s.readRecord(name)
	if err != nil {
		s.log.Debug("missed slot check: record unreadable", "event", evMisfireCheck, "job", name, "error", err.Error())
		return
	}
	if rec == 0 {
		return // never ran: nothing can have been missed
	}
	last := j.spec.lastDueBy(start)
	if last.IsZero() || last.Unix() <= rec {
		return
	}
	late := countSlots(j.spec.Schedule, time.Unix(rec, 0), last)
	if late.count == 0 {
		return
	}
	// Decide only once every replica that could fire these slots normally
	// has tried: the slot lock then tells handled from missed.
	if !s.sleep(start.Add(s.recoverAfter()).Sub(s.clock.Now()), s.stopping) {
		return
	}
	s.misfire(j, late, true)
}

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

// recoverAfter is how long after a slot's due time every replica that
// could fire it normally has tried it.
func (s *Scheduler) recoverAfter() time.Duration {
	return s.cfg.MaxClockSkew + s.lateness + acquireSlack + 500*time.Millisecond
}
