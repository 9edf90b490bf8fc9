// Package scheduler runs cron jobs on every replica and makes sure that each
// slot — a job and the nominal time its schedule gives — runs exactly once
// across the replicas, through the leases of package locking.
//
// Life of a slot on one replica (see docs/concepts.md):
//
//  1. The loop wakes for job J at nominal time T (whole seconds, DST rules
//     applied by Schedule.Next) plus J's jitter offset, if it has a jitter
//     (the due time, the same on every replica: jitter.go). A firing later
//     than the lateness bound (Config.Lateness, default MaxClockSkew+1s)
//     after the due time goes to the misfire policy.
//  2. After this replica's delay for the slot — none for the first of
//     its candidates (Config.Candidates, ranked by a hash of J and T over
//     the live replicas), Config.SecondDelay for the next and
//     Config.Fallback for the two after them, which first ask whether the
//     slot was handled, never for the rest (slot_ranks.go) — it acquires
//     the claim <J>/slot:<unix T>; with overlap
//     forbid also the job lease <J>/run; with overlap replace too, after
//     asking the run that holds it to stop (replace.go). Losing gives
//     slot.skipped with reason held, done, overlap or no_quorum. A split vote (nobody got a
//     majority) is retried after a few random milliseconds, a missing
//     majority (ErrNoQuorum) after a short growing backoff, while T is
//     fresh; no_quorum is logged only once T's freshness ran out. A job
//     lease held by a run still going on is likewise asked again while T
//     is fresh; overlap is logged only if it is still held then.
//  3. The winner runs the plugin under a context bound to its leases (kept
//     alive by the watchdog), the job's timeout and the replica's shutdown,
//     retrying failed attempts with exponential backoff.
//  4. At the end the claim becomes a done marker that outlives every
//     firing of T on any replica, the job lease is released, and the job's
//     record <J>/last (latest handled slot) moves forward.
//
// A job is a JobSpec: a name, the schedule's text (Spec, parsed by New) and a
// jobs.Job; its other fields' zero values are the defaults. New checks every
// spec and the Config (JobSpec.Validate, Config.Validate) and reports all
// problems at once. Every slot's outcome lands in the job's history, which
// package scheduler/history reads back, with the fleet's heartbeats, for
// status views.
//
// What it guarantees and what it does not is spelled out on Scheduler.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Scheduler fires the configured jobs and runs each slot on at most one
// replica; together, replicas sharing lock stores run every slot exactly
// once, under these conditions:
//
//   - replica clocks differ by at most MaxClockSkew;
//   - a majority of the lock stores is reachable and keeps its data (a slot
//     that fires while no majority answers is skipped with reason no_quorum
//     and handed to the misfire policy when the quorum is back);
//   - at least one replica is up and not paused past the lateness bound at
//     the slot's time (otherwise the slot is a misfire: skip, run_once or
//     run_all; slotlock backfill runs it later).
//
// A run that loses its lease (a replica paused past LockTTL, stores lost)
// is canceled as soon as its replica notices; another replica may then run
// the same job meanwhile — the later run has the higher fencing token. The
// scheduler does not persist anything but the locks and one record per job.
type Scheduler struct {
	*engine // the services every component shares (engine.go)

	// admit decides which scheduled claims are sent, and when (admission.go).
	admit *admission

	outage     *outage     // outage.go
	misfire    *misfire    // misfire.go
	outcomes   *outcomes   // outcomes.go
	locks      *locks      // locks.go
	attempts   *attempts   // attempts.go
	settlement *settlement // settlement.go
	timer      *timer      // timer.go
	reconciler *reconciler // reconciler.go
	control    *control    // control.go
	fleet      *fleet      // fleet.go
}

const (
	stateNew int32 = iota
	stateRunning
	stateStopping
	stateStopped
)

const (
	// heartbeatEvery is the longest the loop sleeps; Healthy fails when the
	// loop has not ticked for loopStuckAfter.
	heartbeatEvery = time.Second
	loopStuckAfter = 5 * time.Second
	// storeTimeout bounds the record operations and the probe pings (the
	// lock layer bounds each node by its own, much shorter, op timeout).
	storeTimeout = 5 * time.Second
	// probeEvery is how often a replica that saw the quorum lost pings the
	// stores until a majority answers again.
	probeEvery = 250 * time.Millisecond
	// canceledRunWait is how long Run waits, after canceling the runs still
	// going at the end of ShutdownGrace, for them to return (and log
	// run.canceled, end their leases). It is comfortably above the exec
	// plugin's kill grace (5s: SIGTERM, then SIGKILL), so a job that
	// ignores SIGTERM is killed and accounted for before Run returns. The
	// platform's termination grace must exceed ShutdownGrace + this.
	canceledRunWait = 10 * time.Second
	// acquireSlack is how long after the lateness bound an Acquire may
	// complete and still count as a normal firing (see doneTTL).
	acquireSlack = time.Second
)

// job is one configured job and the loop's state for it. A reload that
// changes the job makes a new job with the new spec; the runs of the old
// one keep it, and both share one jobState, since the job's record and
// done markers live in the stores by its name.
type job struct {
	spec    JobSpec
	next    time.Time // next slot to fire; owned by the loop goroutine
	due     time.Time // when to fire it: next's due time (jitter) + this replica's spread delay
	heapIdx int

	// doneTTL is how long this job's done markers live: the scheduler's
	// doneTTL, or, under run_once, long enough that the marker still stands
	// when a missed slot is judged at any age up to misfire.deadline.
	doneTTL time.Duration
	// since is when a reload added this job, or changed its slots, on this
	// replica (zero: it has been as it is since Run started): the
	// reconciler judges no slot of it from before then.
	since time.Time
	// dueFloor (zero: none) is when a reload changed this job's slots,
	// and floorFrom the first slot the old definition had not fired: such
	// a slot is due no earlier than the reload (dueAt). Lowering the
	// jitter makes slots due earlier: without the floor, one due under the
	// old jitter after the reload but under the new one long before it
	// was found late and dropped.
	dueFloor, floorFrom time.Time
	// replaced is what a reload that changed this job's slots replaced:
	// the definitions in force before, newest first, for the reconciler
	// to judge the slots they fired (reconciler_replaced.go).
	replaced []*job

	*jobState
}

// jobState is what this replica knows of a job across reloads. It is
// kept per job so that a reload hands it to the new definition whole;
// each group of fields belongs to one component, which alone writes it,
// under mu (recovering is its own lock).
type jobState struct {
	mu sync.Mutex
	// Timer (written by a reload) and attempts (read by the allowRuns
	// step): allowRunsUntil (zero: none): a reload changed the job's
	// overlap from allow to forbid or replace; runs started before it
	// hold no job lease and may go on until then (their timeout), so
	// slots look for them.
	allowRunsUntil time.Time
	// Fleet (learnDefinitions) and timer (a reload) write, attempts'
	// takeJobLease step reads: leaseRunsUntil (zero: none): some replica
	// runs the job under forbid or replace, or did lately, while this one
	// runs it under allow: slots here take the job lease as under forbid
	// (guards_rolling.go).
	leaseRunsUntil time.Time
	// Outage: the latest slot skipped for no_quorum, awaiting run_once or
	// run_all recovery, and the earliest (run_all recovers the range).
	missed, missedFirst time.Time
	// Misfire: serializes run_all's recoveries of this job on this
	// replica: missed slots run one at a time, oldest first. A channel
	// of one token, not a mutex: a recovery waiting for the one going on
	// is blocked on a channel, which a synctest bubble (the simulation)
	// counts as blocked, so its clock moves on; waiting on a mutex, it
	// stops the clock while the other waits on a timer.
	recovering chan struct{}
	// Outcomes: the "last handled slot" record — the latest slot this
	// replica handled, what it last wrote, and when (recordHandled).
	recPending, recWritten time.Time
	recWrittenAt           time.Time
	// Control: paused at the latest slot this replica tried (notePause).
	paused bool
	// Fleet (fleet_defs.go) and timer (a reload): the largest jitter of
	// the job that some replica may still fire its slots with, in
	// nanoseconds (largestJitter).
	fleetJitter atomic.Int64
}

func (j *job) name() string { return j.spec.Name }

// New checks cfg and returns a Scheduler. It starts nothing: Run fires the
// jobs; Trigger works without Run.
func New(cfg Config) (*Scheduler, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	e, err := newEngine(c)
	if err != nil {
		return nil, err
	}
	s := &Scheduler{engine: e}
	// The components, each given the others it calls. Where two call each
	// other (outage and outcomes, attempts and misfire, attempts and
	// control; admission starts the attempts whose lock calls it admits),
	// the one built first is completed once the other exists.
	// docs/architecture.md lists these calls and why they go back.
	s.fleet = newFleet(e)
	s.outage = newOutage(e, nil, s.fleet, nil)
	s.outcomes = newOutcomes(e, s.outage)
	s.admit = newAdmissionOf(e, nil)
	s.locks = newLocks(e, s.admit, s.outage)
	s.settlement = newSettlement(e, s.locks, s.outcomes, s.outcomes)
	s.attempts = &attempts{engine: e, locks: s.locks, outcomes: s.outcomes, settlement: s.settlement,
		outage: s.outage, fleet: s.fleet}
	s.misfire = newMisfire(e, s.attempts, s.outcomes)
	s.reconciler = newReconciler(e, s.settlement)
	s.control = newControl(e, s.attempts, s.reconciler)
	s.outage.ends, s.outage.recoverer = s.outcomes, s.misfire
	s.attempts.misfire, s.attempts.control = s.misfire, s.control
	s.admit.attempts = s.attempts
	s.timer = newTimer(e, s.admit, s.misfire, s.fleet, s.outcomes)
	return s, nil
}

// Run fires the jobs until ctx ends, then shuts down gracefully: it fires no
// more slots, lets running runs finish within ShutdownGrace, cancels the
// rest (run.canceled reason shutdown), ends their leases (done markers for
// their slots, job leases released so another replica can take the next
// slot at once) and returns nil. A replica takes part from the first slot
// after Run starts. Run may be called once.
//
// Runs canceled at the end of the grace are waited for until they return
// (an exec job's process gets SIGTERM, then SIGKILL after the plugin's kill
// grace, 5s by default), at most canceledRunWait (10s): each then logs
// run.canceled reason shutdown and ends its leases. The platform's
// termination grace must therefore exceed ShutdownGrace + canceledRunWait.
// A run that has not returned even then is left behind: Run logs an error
// and returns nil; its leases expire after LockTTL.
func (s *Scheduler) Run(ctx context.Context) error {
	if !s.state.CompareAndSwap(stateNew, stateRunning) {
		return fmt.Errorf("%w: Run called twice", ErrStopped)
	}
	s.workers.open()
	start := s.clock.Now()
	s.timer.heartbeat.Store(start.UnixNano())
	// Its first slots may fire before the fleet's definitions are read:
	// they keep a rolling change of overlap apart meanwhile. Without
	// heartbeats nothing is published, so there is nothing to wait for.
	s.defsUnread.Store(s.cfg.Beat > 0)
	loopDone := make(chan struct{})
	s.spawn(func() {
		defer close(loopDone)
		s.timer.loop(ctx, start)
	})
	s.spawn(func() {
		// The start-up checks count a slot as missed only once it is due
		// under the largest jitter the fleet runs (fleet_defs.go).
		s.fleet.learnDefinitions()
		for _, j := range s.jobList() {
			if !j.spec.Disabled {
				s.spawn(func() { s.misfire.startupCheck(j, start) })
			}
		}
	})
	if s.cfg.Beat > 0 {
		s.fleet.begin(start)
		s.spawn(s.fleet.beatLoop)
		s.spawn(s.fleet.viewLoop)
	}
	if s.cfg.ReconcileEvery > 0 {
		s.spawn(func() { s.reconciler.loop(start) })
	}
	if s.fleet.clocks != nil {
		s.spawn(s.fleet.clocks.loop)
	}
	if nodes := newNodeCheck(s.engine); nodes != nil {
		s.spawn(nodes.loop)
	}
	<-loopDone
	s.state.Store(stateStopping)
	s.stopOnce.Do(func() { close(s.stopping) })
	s.admit.carryOut(s.admit.stop()) // the slots waiting for their turn are not tried
	s.log.Info("scheduler stopping: no more slots; waiting for running runs", "grace", s.cfg.ShutdownGrace.String())

	idle := make(chan struct{})
	go func() { s.wg.Wait(); close(idle) }() // the waiter itself cannot be tracked
	stuck := false
	if graceOver := s.sleep(s.cfg.ShutdownGrace, idle); graceOver {
		s.cancelRuns(ErrShutdown)
		if stuck = s.sleep(canceledRunWait, idle); stuck {
			s.log.Error("scheduler stopped while runs ignored their canceled context; their leases expire after lock.ttl",
				"waited", (s.cfg.ShutdownGrace + canceledRunWait).String())
		}
	}
	retired := s.timer.retiredJobs()
	for _, j := range append(slices.Clone(s.jobList()), retired...) {
		s.outcomes.flushRecord(j)
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancelRuns(ErrShutdown)
	if !stuck {
		// Goroutines started after the waiter saw none (a retried lease
		// end, a probe) see the shutdown and end at once; no more can start.
		s.wg.Wait()
	}
	s.workers.close(!stuck)
	s.state.Store(stateStopped)
	s.log.Info("scheduler stopped")
	return nil
}

// Healthy returns nil while Run's loop is alive and ticking (it ticks at
// least every second; a loop silent for 5s on the clock is stuck).
func (s *Scheduler) Healthy() error {
	switch s.state.Load() {
	case stateNew:
		return errors.New("scheduler: not running")
	case stateStopping:
		return errors.New("scheduler: shutting down")
	case stateStopped:
		return ErrStopped
	}
	last := time.Unix(0, s.timer.heartbeat.Load())
	if age := s.clock.Now().Sub(last); age > loopStuckAfter {
		return fmt.Errorf("scheduler: loop stuck: last tick %v ago", age.Round(time.Millisecond))
	}
	if fit := s.cfg.Fit; fit != nil {
		if err := fit(); err != nil {
			return fmt.Errorf("scheduler: unfit: %w", err)
		}
	}
	return nil
}

// Next returns the next n slots (1 <= n <= MaxNext) of the named job
// strictly after from, in the job's time zone (the schedule's location).
// They are nominal slots; a job with jitter starts each at JobSpec.Due.
func (s *Scheduler) Next(name string, from time.Time, n int) ([]time.Time, error) {
	j, ok := s.job(name)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownJob, name)
	}
	if err := checkNext(n); err != nil {
		return nil, fmt.Errorf("scheduler: Next: %w", err)
	}
	out := make([]time.Time, 0, n)
	for t := from; len(out) < n; {
		t = j.spec.Schedule.Next(t)
		if t.IsZero() {
			break
		}
		out = append(out, t)
	}
	return out, nil
}

// SettleAfter is how old a slot of the named job may be and still have no
// history entry with nothing wrong: the reconciler judges a slot once it
// is old enough, at its next pass (the slot timeline's pending). 0 for a
// job the scheduler does not have.
func (s *Scheduler) SettleAfter(job string) time.Duration { return s.reconciler.settleAfter(job) }
