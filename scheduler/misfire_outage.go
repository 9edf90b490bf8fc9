package scheduler

import (
	"context"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// The misfire policy across an outage of the stores: the slots a replica
// skipped with no_quorum are recovered when a majority answers again
// (recoverOutage), and run_once runs one slot an outage, whichever replica
// decides first — each replica raises the job's record of the latest slot
// it missed (noteMissed), a decision waits until the others can have
// raised theirs, and the claim's holder looks for a later missed slot
// (laterMissed) and for another recovery of the same outage in the slot
// history (outageRecovered).

// recoverOutage recovers, when the stores answer again, the slots of j
// that this replica skipped with no_quorum, first to last: run_once the
// latest, run_all the range (without logging its older slots as late
// again: each was logged with no_quorum).
func (m *misfire) recoverOutage(j *job, first, last time.Time) {
	if j.spec.Misfire.Policy == MisfireRunOnce {
		// Replicas whose clocks differ end an outage with different latest
		// missed slots (a slow clock has not fired the outage's last slot
		// yet): each raises the job's record of the latest one, and
		// recover runs a run_once slot only if none later was missed.
		m.noteMissed(j, last)
		// Slots due up to now may still be tried, and missed, by replicas
		// that have not seen the stores again: last is the outage's latest
		// missed slot only once their tries are over and each has raised
		// the record (an outage longer than recoverAfter would otherwise
		// be decided on at once, before the others noted theirs). Counted
		// from a due time, the decision stays off the instants the job's
		// slots fire at, as every recovery's does.
		from := j.spec.Due(last)
		if u := j.spec.lastDueBy(m.clock.Now()); u.After(last) {
			from = j.spec.Due(u)
		}
		m.recoverFrom(j, last, from)
		return
	}
	if j.spec.Misfire.Policy == MisfireRunAll && !first.IsZero() {
		if picked, _ := m.pickMissed(j, countSlots(j.spec.Schedule, first.Add(-time.Second), last)); len(picked) > 0 {
			m.recoverAll(j, picked)
			return
		}
	}
	m.recover(j, last)
}

// noteMissed raises job j's record of the latest slot missed in an outage
// to t.
func (m *misfire) noteMissed(j *job, t time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	_ = m.cfg.Locker.AdvanceRecord(ctx, history.MissedKey(j.name()), t.Unix())
}

// latestMissed reads j's record of the latest slot missed in an outage
// (zero when never written or unreadable: then recover decides alone).
func (m *misfire) latestMissed(j *job) time.Time {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	v, err := m.cfg.Locker.ReadRecord(ctx, history.MissedKey(j.name()))
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
// the claim alone decides).
func (m *misfire) laterMissed(j *job, t time.Time) time.Time {
	latest := m.latestMissed(j)
	if !latest.After(t) {
		return time.Time{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	var open map[int64]bool
	n := 0
	for u := j.spec.Schedule.Next(t); !u.IsZero() && !u.After(latest) && n < laterMissedScan; u = j.spec.Schedule.Next(u) {
		n++
		e, ok, err := m.outcomes.slotRecorded(ctx, j.name(), u)
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
			claims, err := m.cfg.Locker.ReadClaims(ctx, j.name())
			if err != nil {
				return time.Time{}
			}
			open = history.ClaimedSlots(claims)
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
func (m *misfire) outageRecovered(j *job, t time.Time) (time.Time, string) {
	if later := m.laterMissed(j, t); !later.IsZero() {
		return later, "a later slot was missed too: run_once runs the latest, "
	}
	if m.cfg.HistoryKeep <= 0 {
		return time.Time{}, ""
	}
	// The slots before t, newest first, and after t up to now.
	var before []time.Time
	for u := t; len(before) < laterMissedScan; {
		if u = prevSlot(j.spec.Schedule, u.Add(-time.Second)); u.IsZero() {
			break
		}
		before = append(before, u)
	}
	after := history.SlotsBetween(j.spec.Schedule, t, m.clock.Now(), laterMissedScan)
	from := t
	if len(before) > 0 {
		from = before[len(before)-1]
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	m.inflight <- struct{}{}
	log, err := m.cfg.Locker.ReadLog(ctx, j.name(), from.Unix(), m.outageReadLimit(j, t, len(before)))
	<-m.inflight
	if err != nil {
		return time.Time{}, "" // cannot tell: the claim alone decides
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
		case ok && e.Evidence() >= history.RanUnfinished:
			return time.Time{}
		}
	}
	return time.Time{}
}

// outageReadLimit is how many history entries, newest first, reach back
// over the n slots before t: two a slot (a slot may have a skip and a run
// entry) from the first of them to now, at most what the history keeps.
func (m *misfire) outageReadLimit(j *job, t time.Time, n int) int {
	keep := m.cfg.HistoryKeep
	now := m.clock.Now()
	for u := j.spec.Schedule.Next(t); !u.IsZero() && !u.After(now) && n < keep; u = j.spec.Schedule.Next(u) {
		n++
	}
	return min(keep, 2*(n+1)+16)
}

// laterMissedScan bounds the slots laterMissed looks at.
const laterMissedScan = 100
