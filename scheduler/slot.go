package scheduler

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"
)

type slotMode int

const (
	modeNormal  slotMode = iota // fired on time by the loop
	modeRecover                 // a missed slot run under misfire.policy run_once
)

// fire is a fresh slot's goroutine (started at the slot plus this
// replica's spread delay): try the slot unless the replica started shutting
// down meanwhile.
func (s *Scheduler) fire(j *job, t time.Time) {
	if s.isStopping() {
		return
	}
	s.attemptSlot(j, t, modeNormal)
}

// spreadDelay is this replica's delay before trying slot t of job:
// Spread × u², u uniform in [0, 1) from a hash of (job, slot, replica).
// Replicas firing in the same millisecond thus arrive in a random order,
// which avoids most split votes and spreads runs over replicas; squaring
// keeps the first replica's delay small (1/10 of Spread on average with
// three replicas) while leaving the others well behind it.
func (s *Scheduler) spreadDelay(job string, t time.Time) time.Duration {
	if s.cfg.Spread <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(job))
	h.Write([]byte{0})
	h.Write(strconv.AppendInt(nil, t.Unix(), 10))
	h.Write([]byte{0})
	h.Write([]byte(s.cfg.Replica))
	u := float64(h.Sum64()>>11) / (1 << 53) // uniform in [0, 1)
	return time.Duration(u * u * float64(s.cfg.Spread))
}

// Errors acquire returns without asking the stores.
var (
	errStale    = errors.New("scheduler: slot became late while waiting to be tried")
	errStopping = errors.New("scheduler: shutting down")
)

// retryPolicy says how long acquire keeps trying a key.
type retryPolicy struct {
	// splitUntil: retry a split vote (no replica reached a majority because
	// they all tried at once) after a few random milliseconds until then.
	splitUntil time.Time
	// quorumUntil: retry a missing majority (locking.ErrNoQuorum: nodes
	// down, or a healthy node stalled past op_timeout) after a short,
	// growing, jittered backoff until then — the slot's freshness: a node
	// that answers again 100 ms later must not cost the slot.
	quorumUntil time.Time
	// heldUntil: retry a key held by another lease (not a done marker:
	// under overlap forbid, the job lease of a run still going on) after a
	// short, growing, jittered backoff until then. Zero: no retry.
	heldUntil time.Time
	// staleAfter (normal firings): do not ask the stores once the clock
	// passed it, or once the scheduler is stopping: when many slots queue
	// for the lock calls (MaxInFlight), an overloaded replica sheds the
	// ones that turned late instead of acquiring and then dropping them.
	staleAfter time.Time
	// claim: take the key with Locker.Claim (a slot: at most one run, ever)
	// instead of Acquire.
	claim bool
	// abort ends a retry wait (default: the scheduler's stopping). A slot
	// already won waits for its job lease until the shutdown grace ends
	// instead: it either still runs or is handed back.
	abort <-chan struct{}
}

// Quorum retry backoff: quorumBackoffMin doubling up to quorumBackoffMax,
// plus up to half of it in jitter (so replicas do not retry in step).
// While an outage is known (a slot already ran out of freshness), retries
// wait probeEvery instead: the stores are not hammered by every slot of
// every job for the length of the outage.
const (
	quorumBackoffMin = 20 * time.Millisecond
	quorumBackoffMax = 80 * time.Millisecond
	// A held job lease is asked again after heldBackoffMin doubling up to
	// heldBackoffMax (plus up to half in jitter): the next run starts within
	// about a tenth of a second of the previous one's end.
	heldBackoffMin = 25 * time.Millisecond
	heldBackoffMax = 100 * time.Millisecond
)

// acquire takes key under policy p. A retry that would start after its
// deadline is not made: the last error is returned. Shutdown aborts a
// retry wait: the error then wraps both errStopping and the last error.
// The in-flight slot (MaxInFlight) is held only during each Acquire call,
// never while waiting to retry.
func (s *Scheduler) acquire(job string, key locking.Key, p retryPolicy) (*locking.Lease, error) {
	quorumWait, heldWait := quorumBackoffMin, heldBackoffMin
	for {
		s.inflight <- struct{}{}
		start := s.clock.Now()
		if !p.staleAfter.IsZero() {
			var err error
			if start.After(p.staleAfter) {
				err = errStale
			} else if s.isStopping() {
				err = errStopping
			}
			if err != nil {
				<-s.inflight
				return nil, err
			}
		}
		var l *locking.Lease
		var err error
		if p.claim {
			l, err = s.cfg.Locker.Claim(context.Background(), key, s.cfg.LockTTL)
		} else {
			l, err = s.cfg.Locker.Acquire(context.Background(), key, s.cfg.LockTTL)
		}
		now := s.clock.Now()
		<-s.inflight
		s.metrics.LockAcquire(job, now.Sub(start), err)
		var wait time.Duration
		var until time.Time
		switch {
		case err == nil:
			return l, nil
		case isSplitVote(err):
			wait, until = time.Millisecond+rand.N(4*time.Millisecond), p.splitUntil
		case errors.Is(err, locking.ErrNoQuorum) || errors.Is(err, locking.ErrSlowAcquire):
			wait, until = quorumWait+rand.N(quorumWait/2+1), p.quorumUntil
			if s.outage.down.Load() {
				wait = probeEvery + rand.N(probeEvery/4)
			}
			quorumWait = min(2*quorumWait, quorumBackoffMax)
		case heldNotDone(err) && !p.heldUntil.IsZero():
			wait, until = heldWait+rand.N(heldWait/2+1), p.heldUntil
			heldWait = min(2*heldWait, heldBackoffMax)
		default:
			return nil, err
		}
		if !now.Add(wait).Before(until) {
			return nil, err
		}
		abort := p.abort
		if abort == nil {
			abort = s.stopping
		}
		if !s.sleep(wait, abort) {
			return nil, fmt.Errorf("%w: %w", errStopping, err)
		}
	}
}

// attemptSlot tries to win slot t of j and, if it wins, runs it and ends
// its leases.
func (s *Scheduler) attemptSlot(j *job, t time.Time, mode slotMode) {
	if s.isStopping() {
		return // a replica that is shutting down acquires no new slot
	}
	name, slot := j.name(), slotString(t)
	freshUntil := t.Add(s.lateness)
	if mode == modeRecover {
		freshUntil = t.Add(j.spec.Misfire.Deadline)
	}
	var staleAfter time.Time
	if mode == modeNormal {
		staleAfter = t.Add(s.lateness)
	}
	// A missing majority is retried while the slot is fresh; a recovered
	// slot (fresh until its misfire deadline) retries it for as long as a
	// normal firing would, and is recovered again when the quorum is back.
	quorumUntil := freshUntil
	if mode == modeRecover {
		quorumUntil = minTime(freshUntil, s.clock.Now().Add(s.lateness))
	}
	slotPolicy := retryPolicy{splitUntil: freshUntil, quorumUntil: quorumUntil, staleAfter: staleAfter, claim: true}
	lease, err := s.acquire(name, slotKey(name, t), slotPolicy)
	for mode == modeRecover && heldNotDone(err) {
		// A missed slot that looks held: a replica recovering it too (its
		// done marker follows), or a lock attempt that a frozen node
		// executed when it resumed, after its sender had given up and
		// undone it elsewhere (it expires within LockTTL). Look again
		// while the deadline allows.
		wait := s.cfg.LockTTL / 3
		if s.clock.Now().Add(wait).Sub(t) > j.spec.Misfire.Deadline {
			break
		}
		s.log.Debug("missed slot held; trying again", "event", evMisfireCheck, "job", name, "slot", slot,
			"error", err.Error(), "retry_in", wait.String())
		if !s.sleep(wait, s.stopping) {
			return
		}
		lease, err = s.acquire(name, slotKey(name, t), slotPolicy)
	}
	switch {
	case errors.Is(err, errStopping):
		return
	case errors.Is(err, errStale):
		s.misfire(j, lateRange{first: t, last: t, count: 1}, false)
		return
	case err != nil:
		s.lostSlot(j, t, err)
		return
	}
	s.quorumSeen()
	if lease.Abandoned() != nil {
		s.settleAbandoned(j, t, lease)
		return
	}
	if o := lease.Orphan(); o != nil {
		s.spawn(func() { s.settleOrphan(j, o) })
	}
	if mode == modeNormal {
		if late := s.clock.Now().Sub(t); late > s.lateness+acquireSlack {
			// Won, but so late that the slot's done marker might already
			// have expired: the win proves nothing. Let the misfire policy,
			// which checks the slot's marker, decide.
			s.endLease(name, slot, lease, 0, "")
			s.misfire(j, lateRange{first: t, last: t, count: 1}, false)
			return
		}
	}
	var jobLease *locking.Lease
	if j.spec.Overlap == OverlapForbid {
		s.flushPending(name)
		// A run of an earlier slot may still hold the job lease — often one
		// that a replica with a slower clock started late in real time. Ask
		// again until the slot's freshness (but no longer than half the
		// slot lock's ttl: it is not renewed while we wait), and skip for
		// overlap only if it is still held then: a slot is not dropped for
		// a run that ends a moment after it fired.
		// A shutdown meanwhile does not drop the slot: the wait goes on
		// until the grace ends, and then the slot is handed back unmarked.
		heldUntil := minTime(quorumUntil, s.clock.Now().Add(s.cfg.LockTTL/2))
		jobLease, err = s.acquire(name, runKey(name), retryPolicy{splitUntil: freshUntil,
			quorumUntil: quorumUntil, heldUntil: heldUntil, abort: s.runCtx.Done()})
		if err != nil {
			if errors.Is(err, errStopping) {
				s.endLease(name, slot, lease, 0, "")
				s.skipped(name, slot, reasonShutdown, 1, "error", err.Error())
				return
			}
			if errors.Is(err, locking.ErrNotAcquired) {
				s.skipped(name, slot, reasonOverlap, 1, heldAttrs(err)...)
				s.endLease(name, slot, lease, j.doneTTL, reasonOverlap)
				s.recordHandled(j, t)
				return
			}
			// The slot is lost here; the others saw our slot lock as held.
			s.endLease(name, slot, lease, 0, "")
			s.lostSlot(j, t, err)
			return
		}
	}
	leases := []*locking.Lease{lease}
	if jobLease != nil {
		leases = append(leases, jobLease)
	}
	outcome, _ := s.execute(runSpec{
		j: j, slot: t, recovered: mode == modeRecover, leases: leases, parent: s.runCtx,
	})
	// The job lease first: the next slot may start at once, here or elsewhere.
	if jobLease != nil {
		s.endLease(name, slot, jobLease, 0, "")
	}
	s.endLease(name, slot, lease, j.doneTTL, outcome)
	s.recordHandled(j, t)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// lostSlot logs why this replica does not run slot t.
func (s *Scheduler) lostSlot(j *job, t time.Time, err error) {
	name, slot := j.name(), slotString(t)
	var he *locking.HeldError
	switch {
	case !isSplitVote(err) && errors.As(err, &he):
		s.quorumSeen()
		reason := reasonHeld
		switch {
		case he.Done:
			reason = reasonDone
		case he.Claimed:
			reason = reasonClaimed
		}
		s.skipped(name, slot, reason, 1, heldAttrs(err)...)
	case errors.Is(err, locking.ErrSlowAcquire):
		// The stores answered, too slowly to leave any validity: nothing
		// was locked, so nothing ran here.
		s.skipped(name, slot, reasonSlowLock, 1, "error", err.Error())
		s.noteOutage(j, t)
	default:
		// No majority (or a split vote that outlived the slot's freshness,
		// or a closed locker): nothing was locked, so nothing ran here.
		s.skipped(name, slot, reasonNoQuorum, 1, "error", err.Error())
		s.noteOutage(j, t)
	}
}

// endLease ends a lease: a done marker living doneTTL with note, or a plain
// release when doneTTL is 0. A failure other than a lost lease is retried
// when the stores answer again.
func (s *Scheduler) endLease(job, slot string, l *locking.Lease, doneTTL time.Duration, note string) {
	s.endLeaseThen(pendingEnd{job: job, slot: slot, lease: l, doneTTL: doneTTL, note: note})
}

// endLeaseThen ends p.lease as endLease does and calls p.then once the
// stores accepted it (now or after a retry), never when the lease was lost.
func (s *Scheduler) endLeaseThen(p pendingEnd) {
	var err error
	s.ending <- struct{}{}
	if p.doneTTL > 0 {
		err = p.lease.MarkDone(context.Background(), p.doneTTL, p.note)
	} else {
		err = p.lease.Release(context.Background())
	}
	<-s.ending
	if err == nil {
		if p.then != nil {
			p.then()
		}
		return
	}
	if errors.Is(err, locking.ErrLockLost) {
		// Expired or taken over; already reported as lock.lost if a run
		// depended on it.
		s.log.Debug("lease was no longer held when ended", "event", evLockReleaseFailed,
			"job", p.job, "slot", p.slot, "key", p.lease.Key().Name, "error", err.Error())
		return
	}
	s.log.Warn("could not end lease; retrying when the lock stores answer, else it expires after its ttl",
		"event", evLockReleaseFailed, "job", p.job, "slot", p.slot, "key", p.lease.Key().Name, "error", err.Error())
	s.retryEnd(p)
}

// recordHandled notes that slot t of j was handled (run, or skipped for
// overlap or late) and advances the job's record <job>/last to it — not
// after every slot: the record matters only once a slot's done marker may
// have expired (doneTTL), so it is written when the next slot is doneTTL/4
// away or more, when this replica's last write is doneTTL/4 old, and at
// shutdown. It thus lags the latest handled slot by less than doneTTL/2,
// well before that slot's marker can expire (recover relies on this).
func (s *Scheduler) recordHandled(j *job, t time.Time) {
	now := s.clock.Now()
	next := j.spec.Schedule.Next(t)
	j.mu.Lock()
	if t.After(j.recPending) {
		j.recPending = t
	}
	write := s.isStopping() || next.IsZero() || next.Sub(t) >= s.doneTTL/4 ||
		now.Sub(j.recWrittenAt) >= s.doneTTL/4
	j.mu.Unlock()
	if write {
		s.flushRecord(j)
	}
}

// flushRecord writes the job's pending record, if newer than the last write.
func (s *Scheduler) flushRecord(j *job) {
	j.mu.Lock()
	v := j.recPending
	if !v.After(j.recWritten) {
		j.mu.Unlock()
		return
	}
	prevAt := j.recWrittenAt
	j.recWrittenAt = s.clock.Now() // others racing here see a fresh write
	j.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	s.inflight <- struct{}{}
	err := s.cfg.Locker.AdvanceRecord(ctx, lastKey(j.name()), v.Unix())
	<-s.inflight
	j.mu.Lock()
	defer j.mu.Unlock()
	if err != nil {
		j.recWrittenAt = prevAt // try again at the next handled slot
		s.log.Warn("could not advance the job's last-slot record", "event", evLockReleaseFailed,
			"job", j.name(), "slot", slotString(v), "error", err.Error())
		return
	}
	if v.After(j.recWritten) {
		j.recWritten = v
	}
}

// runSpec is one run to execute: a slot won (slot set) or a manual trigger.
type runSpec struct {
	j         *job
	slot      time.Time // zero when manual
	manual    bool
	recovered bool
	leases    []*locking.Lease // the fencing token is the last one's
	parent    context.Context
}

// isSplitVote reports an Acquire that nobody won because the votes split.
func isSplitVote(err error) bool { return errors.Is(err, locking.ErrSplitVote) }

// backoff is the wait after failed attempt n (1-based): Backoff * 2^(n-1),
// capped at 24h.
func backoff(base time.Duration, n int) time.Duration {
	const ceiling = 24 * time.Hour
	d := base
	for i := 1; i < n && d < ceiling; i++ {
		d *= 2
	}
	return min(d, ceiling)
}

// execute runs the plugin under ctx = parent ∧ leases ∧ timeout, with
// retries, and logs the run's life. It returns the outcome and the job's
// last error. It does not end the leases.
func (s *Scheduler) execute(r runSpec) (outcome string, runErr error) {
	name := r.j.name()
	slot := slotManual
	if !r.manual {
		slot = slotString(r.slot)
	}
	token := r.leases[len(r.leases)-1].Token()
	// The run id is the first lease's id: a slot's claim carries it, so a
	// run that is abandoned is reported under the id it started with.
	runID := r.leases[0].ID()
	log := s.log.With("job", name, "slot", slot, "run_id", runID, "fencing_token", token)
	if r.recovered {
		log.Warn("running a missed slot (misfire policy run_once)", "event", evMisfireRecovered)
	}
	log.Info("slot acquired", "event", evSlotAcquired)

	ctx := r.parent
	for _, l := range r.leases {
		ctx = l.Keep(ctx)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if t := r.j.spec.Timeout; t > 0 {
		s.spawn(func() {
			if s.sleep(t, ctx.Done()) {
				cancel(ErrTimeout)
			}
		})
	}

	started := s.clock.Now()
	startAttrs := []any{"event", evRunStarted, "attempt", 1}
	if !r.manual && !r.recovered {
		delay := started.Sub(r.slot)
		s.metrics.StartDelay(name, delay)
		startAttrs = append(startAttrs, "start_delay_ms", float64(delay.Microseconds())/1000)
	}
	log.Info("run started", startAttrs...)

	attempt := 1
	for {
		run := jobs.Run{
			Job: name, Manual: r.manual, RunID: runID, Replica: s.cfg.Replica,
			FencingToken: token, Attempt: attempt, Logger: log.With("attempt", attempt),
		}
		if !r.manual {
			run.Slot = r.slot.UTC()
		}
		runErr = jobs.Execute(ctx, r.j.spec.Job, run)
		if runErr == nil {
			outcome = outcomeSucceeded
			break
		}
		if ctx.Err() != nil {
			outcome = outcomeCanceled
			break
		}
		if attempt > r.j.spec.Retry.Max {
			outcome = outcomeFailed
			break
		}
		wait := backoff(r.j.spec.Retry.Backoff, attempt)
		log.Warn("run attempt failed; retrying", "event", evRunRetrying, "attempt", attempt,
			"error", runErr.Error(), "backoff", wait.String())
		if !s.sleep(wait, ctx.Done()) {
			outcome = outcomeCanceled
			break
		}
		attempt++
	}
	dur := s.clock.Now().Sub(started)
	// One lock.lost line per run, however many of its leases were lost
	// (typically the slot lock and the job lease expire together): key
	// names the first, lost_keys all of them when more than one.
	var lostKeys []string
	for _, l := range r.leases {
		select {
		case <-l.Lost():
			lostKeys = append(lostKeys, l.Key().Name)
		default:
		}
	}
	if len(lostKeys) > 0 {
		s.metrics.LeaseLost(name)
		attrs := []any{"event", evLockLost, "key", lostKeys[0], "attempt", attempt}
		if len(lostKeys) > 1 {
			attrs = append(attrs, "lost_keys", lostKeys)
		}
		log.Error("lease lost: could not renew it on a majority before it expired", attrs...)
	}
	switch outcome {
	case outcomeSucceeded:
		log.Info("run succeeded", "event", evRunSucceeded, "attempt", attempt, "duration_ms", ms(dur))
	case outcomeFailed:
		log.Error("run failed", "event", evRunFailed, "attempt", attempt, "duration_ms", ms(dur),
			"error", runErr.Error())
	case outcomeCanceled:
		attrs := []any{"event", evRunCanceled, "reason", cancelReason(context.Cause(ctx)),
			"attempt", attempt, "duration_ms", ms(dur)}
		if runErr != nil {
			attrs = append(attrs, "error", runErr.Error())
		}
		log.Warn("run canceled", attrs...)
	}
	s.metrics.RunFinished(name, outcome, dur)
	return outcome, runErr
}

// heldNotDone reports a refusal because another lease holds the key (not a
// done marker, not a split vote).
func heldNotDone(err error) bool {
	var he *locking.HeldError
	return err != nil && !isSplitVote(err) && errors.As(err, &he) && !he.Done
}
