package scheduler

import (
	"context"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"
)

// What other replicas run a job with: its jitter, its overlap policy.
// During a rolling change of a job's jitter — a restart or a reload, one
// replica after the other — a replica with the lower jitter finds slot T due long before one with the
// higher jitter fires it. Two things must then hold: its start-up check
// must not take T for missed and hand it to the misfire policy (under
// skip it would close T as late, and the replica that still had to fire
// T would find it done), and its done markers must outlive the other
// replica's later firing (without a slot history, a marker gone is a slot
// claimed fresh and run twice). Every replica publishes its definitions,
// jitter included (fleet.go); this one keeps, per job, the largest jitter
// of the versions published within a republication interval — those some
// replica still runs — and of the definition a reload replaced here.
//
// Likewise a replica that runs a job under forbid or replace beside one
// that runs it under allow (a rolling change of the policy): the allow
// runs hold no job lease, so its slots look for them (watchAllowRuns);
// and the replica under allow, which reads the job lease on every slot,
// takes it as under forbid while it knows of such a replica
// (watchLeaseRuns): each side waits for the other (guards_rolling.go says
// why that pairing is safe).

// defsBeats is how many beats apart a replica reads the fleet's
// definitions again: a replica with a larger jitter, or under allow,
// that started since is learned within it.
const defsBeats = 6

// learnDefinitions reads the definitions the fleet published lately and
// keeps each job's largest jitter (largestJitter), and opens the window
// of a job that others run under allow (watchAllowRuns); a read that
// fails leaves what was learned before.
func (f *fleet) learnDefinitions() {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	versions, err := history.ReadDefinitions(ctx, f.cfg.Locker)
	if err != nil {
		f.log.Debug("fleet's job definitions unread", "error", err.Error())
		return
	}
	defer f.defsUnread.Store(false) // once the windows below are open
	beat := f.cfg.Beat
	if beat <= 0 {
		beat = history.DefaultBeat
	}
	now := f.clock.Now()
	since := now.Add(-(republishBeats + 2) * beat)
	largest := history.LargestJitters(versions, since)
	allow := history.AllowsOverlap(versions, since)
	leased := history.HoldsJobLease(versions, since)
	for _, j := range f.jobList() {
		j.fleetJitter.Store(int64(largest[j.name()]))
		if allow[j.name()] && j.spec.Overlap != OverlapAllow {
			j.watchAllowRuns(now, f.cfg.LockTTL)
		}
		if leased[j.name()] && j.spec.Overlap == OverlapAllow {
			j.watchLeaseRuns(now, f.cfg.LockTTL)
		}
	}
}

// watchLeaseRuns opens, or draws out, the window in which j's slots,
// under allow, take the job lease as under forbid (attempt's takeJobLease
// step): another replica runs j under forbid or replace, or did lately,
// and may not know yet that this one runs it under allow; a reload from
// forbid or replace to allow opens it too (timer's notePolicyChange). It lasts
// as long as a run that started under the other policy may go on: its
// timeout (this definition's, else a day) and a lease's time; learned
// again, it is drawn out.
func (j *job) watchLeaseRuns(now time.Time, ttl time.Duration) {
	j.mu.Lock()
	j.leaseRunsUntil = maxTime(j.leaseRunsUntil, now.Add(j.runsLast(ttl)))
	j.mu.Unlock()
}

// runsLast is how long a run of j may go on, seen from the slot that
// started it: its timeout (a day when it has none) and a lease's time ttl.
func (j *job) runsLast(ttl time.Duration) time.Duration {
	d := j.spec.Timeout
	if d <= 0 {
		d = 24 * time.Hour
	}
	return d + ttl
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// watchAllowRuns opens, unless one is open, the window in which j's
// slots look for runs of the job that hold no job lease (attempt's
// allowRuns step): another replica runs j under overlap allow, or did
// lately — a restart from allow to forbid or replace, as timer's
// notePolicyChange is the reload's. Its runs may go on for their timeout
// (this definition's, else a day) and a lease's time.
func (j *job) watchAllowRuns(now time.Time, ttl time.Duration) {
	j.mu.Lock()
	if !now.Before(j.allowRunsUntil) {
		j.allowRunsUntil = now.Add(j.runsLast(ttl))
	}
	j.mu.Unlock()
}

// noteJitter raises j's largest jitter to d: the jitter of a definition
// this replica ran it with until now.
func (j *job) noteJitter(d time.Duration) {
	for {
		old := j.fleetJitter.Load()
		if int64(d) <= old || j.fleetJitter.CompareAndSwap(old, int64(d)) {
			return
		}
	}
}

// largestJitter is the largest jitter any replica may fire j's slots
// with: its own, or one the fleet still runs.
func (j *job) largestJitter() time.Duration {
	return max(j.spec.Jitter, time.Duration(j.fleetJitter.Load()))
}

// markerTTL is how long j's done markers live: doneTTL, which covers the
// job's own jitter, and the rest of the largest jitter of the fleet, so
// that a replica that fires a slot that much later still finds it done.
func (j *job) markerTTL() time.Duration {
	return j.doneTTL + max(0, j.largestJitter()-max(j.spec.Jitter, 0))
}

// lateSpec is j's definition with the largest jitter of the fleet: a slot
// is past for every replica only once it is due under that one.
func (j *job) lateSpec() *JobSpec {
	spec := j.spec
	spec.Jitter = j.largestJitter()
	return &spec
}
