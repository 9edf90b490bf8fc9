package scheduler

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
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
// deadline, is checked by acquiring the slot lock.

// misfire applies j's misfire policy to the slots in late. probe is set for
// slots found at start: then the skip policy first checks, by taking the
// latest slot's lock, that no replica handled it, so that N replicas
// starting together log the miss once (the one that wins the lock).
func (s *Scheduler) misfire(j *job, late lateRange, probe bool) {
	name := j.name()
	if j.spec.Misfire.Policy == MisfireRunOnce && s.clock.Now().Sub(late.last) <= j.spec.Misfire.Deadline {
		if late.count > 1 {
			rest := late
			rest.count--
			rest.last = late.prev
			s.logLate(name, rest, "older missed slots: run_once runs only the latest")
		}
		s.recover(j, late.last)
		return
	}
	if probe {
		until := s.clock.Now().Add(time.Second)
		lease, err := s.acquire(name, slotKey(name, late.last), retryPolicy{splitUntil: until, quorumUntil: until})
		if err != nil {
			// Held or done: handled by a replica. No quorum: slots fire
			// into no_quorum skips anyway. Either way nothing to report.
			s.log.Debug("missed slot check: not taken", "event", evMisfireCheck, "job", name, "slot", slotString(late.last),
				"error", err.Error())
			return
		}
		s.endLease(name, slotString(late.last), lease, j.doneTTL, reasonLate)
		s.recordHandled(j, late.last)
	}
	note := "misfire policy skip"
	if j.spec.Misfire.Policy == MisfireRunOnce {
		note = "older than the misfire deadline"
	}
	s.logLate(name, late, note)
}

func (s *Scheduler) logLate(job string, late lateRange, note string) {
	attrs := []any{"missed", late.count, "note", note}
	if late.count > 1 {
		attrs = append(attrs, "first_slot", slotString(late.first))
	}
	if late.atLeast {
		attrs = append(attrs, "missed_at_least", true)
	}
	s.skipped(job, slotString(late.last), reasonLate, late.count, attrs...)
}

// recover runs missed slot t of j under run_once, unless it is past the
// deadline or some replica handled it.
func (s *Scheduler) recover(j *job, t time.Time) {
	name := j.name()
	// Decide only once every replica that could fire t normally has tried
	// (clocks up to MaxClockSkew behind, up to Lateness late): a slot this
	// replica missed may well be run by a replica with a slower clock, and
	// the slot lock then says so. Half a second more keeps the recovered run
	// off the instant at which a frequent job's next slot fires.
	if !s.sleep(t.Add(s.recoverAfter()).Sub(s.clock.Now()), s.stopping) {
		return
	}
	age := s.clock.Now().Sub(t)
	if age > j.spec.Misfire.Deadline {
		s.logLate(name, lateRange{first: t, last: t, count: 1}, "older than the misfire deadline")
		return
	}
	// The slot lock decides: a replica that handled t left its lock or a
	// done marker, and under run_once the marker outlives the deadline
	// (job.doneTTL). The job's record is no help here: it holds only the
	// latest handled slot, which this replica's own runs after t move past
	// t.
	s.attemptSlot(j, t, modeRecover)
}

// startupCheck looks, once per job at Run's start, for slots that passed
// while no replica ran them: slots after the job's record up to the start.
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
	last := prevSlot(j.spec.Schedule, start)
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

// ---- quorum outages ----

// outage tracks lock-store trouble: while it lasts one goroutine pings the
// stores; when a majority answers (or any Acquire gets a definitive
// answer) the leases that could not be ended are ended and, under run_once,
// the latest slot each job skipped with no_quorum is recovered.
type outage struct {
	down    atomic.Bool
	mu      sync.Mutex
	probing bool
	pending map[string][]pendingEnd // by job
}

// pendingEnd is a lease whose Release or MarkDone failed for lack of a
// majority.
type pendingEnd struct {
	job, slot string
	lease     *locking.Lease
	doneTTL   time.Duration
	note      string
	then      func() // called once the stores accepted the end
}

// noteOutage records that slot t of j was skipped for lack of a quorum.
func (s *Scheduler) noteOutage(j *job, t time.Time) {
	if j.spec.Misfire.Policy == MisfireRunOnce {
		j.mu.Lock()
		if t.After(j.missed) {
			j.missed = t
		}
		j.mu.Unlock()
	}
	s.outage.down.Store(true)
	s.startProbe()
}

func (s *Scheduler) retryEnd(p pendingEnd) {
	s.outage.mu.Lock()
	if s.outage.pending == nil {
		s.outage.pending = map[string][]pendingEnd{}
	}
	s.outage.pending[p.job] = append(s.outage.pending[p.job], p)
	s.outage.mu.Unlock()
	s.outage.down.Store(true)
	s.startProbe()
}

func (s *Scheduler) startProbe() {
	s.outage.mu.Lock()
	defer s.outage.mu.Unlock()
	if s.outage.probing || s.state.Load() != stateRunning {
		// Without Run (a Trigger alone) nothing would ever stop the
		// probe: a lease that could not be ended then expires by itself.
		return
	}
	s.outage.probing = s.spawn(s.probe)
}

// probe pings the stores every probeEvery until a majority answers, the
// outage is seen over by an Acquire, or the scheduler stops.
func (s *Scheduler) probe() {
	defer func() {
		s.outage.mu.Lock()
		s.outage.probing = false
		s.outage.mu.Unlock()
		if s.outage.down.Load() && !s.isStopping() {
			s.startProbe() // an outage began again while we were leaving
		}
	}()
	for s.outage.down.Load() {
		if !s.sleep(probeEvery, s.stopping) {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		_, err := s.cfg.Locker.Ping(ctx)
		cancel()
		if err == nil {
			s.quorumSeen()
		} else if errors.Is(err, locking.ErrClosed) {
			return
		}
	}
}

// quorumSeen is called whenever the stores gave a majority answer. After an
// outage it ends the pending leases and starts the run_once recoveries.
func (s *Scheduler) quorumSeen() {
	if !s.outage.down.Load() || !s.outage.down.CompareAndSwap(true, false) {
		return
	}
	s.outage.mu.Lock()
	pending := s.outage.pending
	s.outage.pending = nil
	s.outage.mu.Unlock()
	for _, ps := range pending {
		s.spawn(func() {
			for _, p := range ps {
				s.endLeaseThen(p)
			}
		})
	}
	for _, j := range s.order {
		j.mu.Lock()
		t := j.missed
		j.missed = time.Time{}
		j.mu.Unlock()
		if !t.IsZero() && !s.isStopping() {
			s.spawn(func() { s.recover(j, t) })
		}
	}
}

// flushPending ends, now, the leases of job whose ending failed during an
// outage, so that its own job lease does not block the slot being tried.
func (s *Scheduler) flushPending(job string) {
	s.outage.mu.Lock()
	ps := s.outage.pending[job]
	delete(s.outage.pending, job)
	s.outage.mu.Unlock()
	for _, p := range ps {
		s.endLeaseThen(p)
	}
}

// recoverAfter is how long after a slot every replica that could fire it
// normally has tried it.
func (s *Scheduler) recoverAfter() time.Duration {
	return s.cfg.MaxClockSkew + s.lateness + acquireSlack + 500*time.Millisecond
}

func (s *Scheduler) readRecord(job string) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	s.inflight <- struct{}{}
	defer func() { <-s.inflight }()
	return s.cfg.Locker.ReadRecord(ctx, lastKey(job))
}
