package scheduler

import (
	"strconv"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"
)

// The misfire policy: what happens to slots that were not tried on time.
// Misfires reach it three ways:
//
//   - the loop woke later than the lateness bound (this replica was paused
//     or starved), or won a slot too late for the win to prove anything:
//     fireDue and the attempt's exit hand the late slots over;
//   - at start, the job's record shows slots that passed while no replica
//     ran (startupCheck, misfire_startup.go);
//   - slots skipped with no_quorum: when a majority answers again the latest
//     one is recovered under run_once, the range under run_all (noteOutage,
//     quorumSeen; recoverOutage, misfire_outage.go).
//
// skip logs the missed slots once, as slot.skipped reason late. run_once
// runs the latest one if it is within the deadline and no replica handled
// it: its done marker (or lock), which for run_once jobs lives past the
// deadline, is checked by claiming the slot (and, once the marker of a
// replica with other settings may have expired, the slot history:
// outcomes_history.go). A recovered slot goes through the same steps as a
// scheduled one (attempt.go), with origin recovered.
//
// run_all: every missed slot no older than misfire.deadline
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
// it (outcomes_history.go). Replicas that recover the same slots race for each
// claim; the loser waits on it (a claim held, not yet done) before it
// moves on, so the fleet, too, runs them one after the other.

// misfire is the component that applies the misfire policies: it keeps
// no state of its own beyond each job's outage marks and recovery lock
// (jobState), and the records in the stores. It runs a recovered slot
// through the attempt pipeline (attempts) and reads outcomes through
// outcomes.
type misfire struct {
	*engine
	attempts misfireAttempts
	outcomes outcomeReader
	records  recordReader
}

// misfireAttempts runs a slot's attempt (a recovered one), and claims a
// slot found missed at start to look at it (attempt.go, attempt_probe.go).
type misfireAttempts interface {
	slotAttempter
	probeLate(j *job, t time.Time) probe
}

// recordReader reads the job's last-slot record (outcomes_records.go).
type recordReader interface {
	readRecord(job string) (int64, error)
}

func newMisfire(e *engine, attempts misfireAttempts, outcomes *outcomes) *misfire {
	return &misfire{engine: e, attempts: attempts, outcomes: outcomes, records: outcomes}
}

// handle applies j's misfire policy to the slots in late: run_all or
// run_once recovers what it takes, and the rest is logged late — of
// those the loop woke too late for, the ones nobody handled
// (misfire_handled.go); a slot an attempt gave up, at once.
func (m *misfire) handle(j *job, late lateRange) {
	switch {
	case m.recoverLate(j, late):
	case late.woke:
		m.logUnhandled(j, late, lateNote(j))
	default:
		m.logLate(j.name(), late, lateNote(j))
	}
}

// recoverLate recovers the slots of late that j's policy runs, and logs
// the older ones it leaves as late. It returns false, having done
// nothing, under skip or when no slot of late is within the deadline: the
// caller then logs them as late.
func (m *misfire) recoverLate(j *job, late lateRange) bool {
	switch j.spec.Misfire.Policy {
	case MisfireRunAll:
		picked, before := m.pickMissed(j, late)
		if len(picked) == 0 {
			return false
		}
		if rest := late.count - len(picked); (rest > 0 || late.atLeast) && !before.IsZero() {
			m.logOlder(j, lateRange{first: late.first, last: before, count: max(rest, 1), atLeast: late.atLeast, woke: late.woke},
				"older missed slots: run_all runs the newest "+strconv.Itoa(j.spec.Misfire.Max)+
					" (misfire.max) that are within the misfire deadline")
		}
		m.recoverAll(j, picked)
		return true
	case MisfireRunOnce:
		if m.clock.Now().Sub(j.spec.Due(late.last)) > j.spec.Misfire.Deadline {
			return false
		}
		if rest, ok := late.older(j.spec.Schedule); ok {
			m.logOlder(j, rest, "older missed slots: run_once runs only the latest")
		}
		m.recover(j, late.last)
		return true
	}
	return false
}

// lateNote is why slots that j's policy does not run are logged late.
// A replica that logs them only knows that it came too late for them
// (paused, starved, or down): other replicas may well have run them, and
// the note says so — the reconciler is the one that reports a slot
// nobody ran (slot.missed).
func lateNote(j *job) string {
	if j.spec.Misfire.Policy.recovers() {
		return "older than the misfire deadline"
	}
	return skipNote
}

// skipNote says what slot.skipped late means under misfire policy skip.
// A line about one slot goes without it: a replica past its capacity
// sheds thousands of slots a second, one such line each, and the note
// would be 200 of each line's 350 bytes — the same words every time,
// which the line's reason says already (the contract's late: fired too
// late, and the misfire policy says skip). A line about several slots
// (a replica frozen, or started after an outage) keeps it.
const skipNote = "misfire policy skip: this replica came too late for them; another replica may have run them " +
	"(a slot nobody ran is reported slot.missed by the reconciler)"

func (m *misfire) logLate(job string, late lateRange, note string) {
	attrs := []any{"missed", late.count}
	if note != skipNote || late.count > 1 {
		attrs = append(attrs, "note", note)
	}
	if late.count > 1 {
		attrs = append(attrs, "first_slot", slotString(late.first))
	}
	if late.atLeast {
		attrs = append(attrs, "missed_at_least", true)
	}
	m.skipped(job, slotString(late.last), history.ReasonLate, late.count, attrs...)
}

// recover runs missed slot t of j under run_once or run_all, unless it is
// past the deadline (counted from its due time) or some replica handled it.
func (m *misfire) recover(j *job, t time.Time) { m.recoverFrom(j, t, j.spec.Due(t)) }

// recoverFrom is recover deciding once every replica that could fire a
// slot due at from normally has tried it (from is t's due time, or later).
func (m *misfire) recoverFrom(j *job, t, from time.Time) {
	name := j.name()
	due := j.spec.Due(t)
	// Decide only once every replica that could fire t normally has tried
	// (clocks up to MaxClockSkew behind, up to Lateness late): a slot this
	// replica missed may well be run by a replica with a slower clock, and
	// the claim then says so. Half a second more keeps the recovered run
	// off the instant at which a frequent job's next slot fires.
	if !m.sleep(from.Add(m.recoverAfter()).Sub(m.clock.Now()), m.stopping) {
		return
	}
	age := m.clock.Now().Sub(due)
	if age > j.spec.Misfire.Deadline {
		m.logLate(name, lateRange{first: t, last: t, count: 1}, "older than the misfire deadline")
		return
	}
	if j.spec.Misfire.Policy == MisfireRunOnce {
		if later := m.laterMissed(j, t); !later.IsZero() {
			m.logLate(name, lateRange{first: t, last: t, count: 1},
				"a later slot was missed too: run_once runs the latest, "+slotString(later))
			return
		}
	}
	// The claim decides: a replica that handled t left its lock or a
	// done marker, and under run_once the marker outlives the deadline
	// (job.doneTTL). The job's record is no help here: it holds only the
	// latest handled slot, which this replica's own runs after t move past
	// t.
	m.attempts.attemptSlot(j, t, originRecovered, nil)
}

// recoverAll runs the slots picked (pickMissed), oldest first. One
// recovery sequence at a time on this replica: a later one (this replica
// paused again) starts with its oldest slot once this one is over, and
// its slots that passed the deadline meanwhile are late.
func (m *misfire) recoverAll(j *job, picked []time.Time) {
	j.recovering <- struct{}{}
	defer func() { <-j.recovering }()
	for _, t := range picked {
		if m.isStopping() {
			return
		}
		m.recover(j, t)
	}
}

// pickMissed returns the slots of late that run_all runs — those due no
// longer than the deadline ago, the newest Max of them, oldest first —
// and the slot of late just before the first of them (zero when none).
func (m *misfire) pickMissed(j *job, late lateRange) (picked []time.Time, before time.Time) {
	now := m.clock.Now()
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

// recoverAfter is how long after a slot's due time every replica that
// could fire it normally has tried it.
func (e *engine) recoverAfter() time.Duration {
	return e.cfg.MaxClockSkew + e.lateness + acquireSlack + 500*time.Millisecond
}
