package scheduler

import (
	"errors"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

type slotMode int

const (
	modeNormal  slotMode = iota // fired on time by the loop
	modeRecover                 // a missed slot run under misfire.policy run_once or run_all
)

// fire is a fresh slot's goroutine (started at the slot's due time plus
// this replica's spread delay): try the slot unless the replica started
// shutting down meanwhile.
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

// attemptSlot tries to win slot t of j and, if it wins, runs it and ends
// its leases. Its times count from the slot's due time (t plus the job's
// jitter offset); the keys and logs name t.
func (s *Scheduler) attemptSlot(j *job, t time.Time, mode slotMode) {
	if s.isStopping() {
		return // a replica that is shutting down acquires no new slot
	}
	name, slot := j.name(), slotString(t)
	due := j.spec.Due(t)
	tctx, span := s.traceSlot(j, t, mode)
	defer span.end()
	freshUntil := due.Add(s.lateness)
	if mode == modeRecover {
		freshUntil = due.Add(j.spec.Misfire.Deadline)
	}
	var staleAfter time.Time
	if mode == modeNormal {
		staleAfter = due.Add(s.lateness)
	}
	// A missing majority is retried while the slot is fresh; a recovered
	// slot (fresh until its misfire deadline) retries it for as long as a
	// normal firing would, and is recovered again when the quorum is back.
	quorumUntil := freshUntil
	if mode == modeRecover {
		quorumUntil = minTime(freshUntil, s.clock.Now().Add(s.lateness))
	}
	slotPolicy := retryPolicy{splitUntil: freshUntil, quorumUntil: quorumUntil, staleAfter: staleAfter, claim: true, trace: tctx}
	if j.spec.Overlap == OverlapForbid {
		// The job lease in the same call as the claim, where it is free.
		slotPolicy.with = runKey(name)
	}
	lease, err := s.acquire(name, history.SlotKey(name, t), slotPolicy)
	for mode == modeRecover && heldNotDone(err) {
		// A missed slot that looks held: a replica recovering it too (its
		// done marker follows), or a lock attempt that a frozen node
		// executed when it resumed, after its sender had given up and
		// undone it elsewhere (it expires within LockTTL). Look again
		// while the deadline allows.
		wait := s.cfg.LockTTL / 3
		if s.clock.Now().Add(wait).Sub(due) > j.spec.Misfire.Deadline {
			break
		}
		s.log.Debug("missed slot held; trying again", "event", evMisfireCheck, "job", name, "slot", slot,
			"error", err.Error(), "retry_in", wait.String())
		if !s.sleep(wait, s.stopping) {
			span.skip(history.ReasonShutdown)
			return
		}
		lease, err = s.acquire(name, history.SlotKey(name, t), slotPolicy)
	}
	switch {
	case errors.Is(err, errStopping):
		span.skip(history.ReasonShutdown)
		return
	case errors.Is(err, errStale):
		span.skip(history.ReasonLate)
		s.misfire(j, lateRange{first: t, last: t, count: 1}, false)
		return
	case errors.Is(err, locking.ErrPaused):
		span.skip(history.ReasonPaused)
		s.pausedSlot(j, t, err)
		return
	case err != nil:
		span.skip(s.lostSlot(j, t, err))
		return
	}
	s.quorumSeen()
	// The job lease taken with the claim: released unless the run below
	// takes it over.
	joined := lease.Grant().Joined
	defer func() {
		if joined != nil {
			s.endLease(name, slot, joined, 0, "")
		}
	}()
	if lease.Grant().Abandoned != nil {
		span.settled()
		s.settleAbandoned(j, t, lease)
		return
	}
	if lease.Grant().Leftover {
		// Another claim of this slot is on a minority of the stores: not
		// ours to run under. Hand the slot back; the leftover is cleared
		// when a later claim of the job is pointed to it.
		span.skip(history.ReasonClaimed)
		s.endLease(name, slot, lease, 0, "")
		s.skipped(name, slot, history.ReasonClaimed, 1, "note", "a claim of the slot is on a minority of the stores")
		return
	}
	if p := lease.Grant().Pause; p.Covers(due) {
		// A slot due while the job was paused, claimed after the pause
		// ended (a recovery): still paused.
		span.skip(history.ReasonPaused)
		s.endLease(name, slot, lease, 0, "")
		s.pausedSlot(j, t, &locking.PausedError{Key: lease.Grant().Key, Pause: p})
		return
	}
	s.notePause(j, locking.Pause{})
	if o := lease.Grant().Orphan; o != nil {
		s.spawn(func() { s.settleOrphan(j, o) })
	}
	if mode == modeNormal {
		if late := s.clock.Now().Sub(due); late > s.lateness+acquireSlack {
			// Won, but so late that the slot's done marker might already
			// have expired: the win proves nothing. Let the misfire policy,
			// which checks the slot's marker, decide.
			span.skip(history.ReasonLate)
			s.endLease(name, slot, lease, 0, "")
			s.misfire(j, lateRange{first: t, last: t, count: 1}, false)
			return
		}
	}
	if s.clock.Now().Sub(t) > s.markerSafe() && s.settledInHistory(j, t, lease) {
		// Won so long after the slot (a recovery, a large jitter) that a
		// replica's done marker of it may have expired: the history said
		// it was handled, or could not say.
		return
	}
	var jobLease *locking.Lease
	if joined != nil {
		jobLease, joined = joined, nil
		s.flushPending(name)
	} else if j.spec.Overlap != OverlapAllow {
		s.flushPending(name)
		// A run of an earlier slot may still hold the job lease — often one
		// that a replica with a slower clock started late in real time. Ask
		// again until the slot's freshness (but no longer than half the
		// slot lock's ttl: it is not renewed while we wait), and skip for
		// overlap only if it is still held then: a slot is not dropped for
		// a run that ends a moment after it fired.
		// A shutdown meanwhile does not drop the slot: the wait goes on
		// until the grace ends, and then the slot is handed back unmarked.
		// Under replace the run going on is asked to stop, and waited for
		// longer (takeJobLease).
		heldUntil := minTime(quorumUntil, s.clock.Now().Add(s.cfg.LockTTL/2))
		jobLease, err = s.takeJobLease(j, t, lease, retryPolicy{splitUntil: freshUntil,
			quorumUntil: quorumUntil, heldUntil: heldUntil, abort: s.runCtx.Done(), trace: tctx})
		if err != nil {
			if s.replacedSlot(j, t, lease, err) {
				span.skip(history.ReasonReplaced)
				return
			}
			if errors.Is(err, errStopping) {
				span.skip(history.ReasonShutdown)
				s.endLease(name, slot, lease, 0, "")
				s.skipped(name, slot, history.ReasonShutdown, 1, "error", err.Error())
				return
			}
			if errors.Is(err, locking.ErrNotAcquired) {
				span.skip(history.ReasonOverlap)
				s.skipped(name, slot, history.ReasonOverlap, 1, heldAttrs(err)...)
				s.endHandled(pendingEnd{job: name, slot: slot, lease: lease, doneTTL: j.doneTTL, note: string(history.ReasonOverlap), at: t,
					history: &history.Entry{Slot: slot, Outcome: history.OutcomeSkipped, Reason: history.ReasonOverlap, Replica: s.cfg.Replica}}, j, t)
				return
			}
			// The slot is lost here; the others saw our slot lock as held.
			s.endLease(name, slot, lease, 0, "")
			span.skip(s.lostSlot(j, t, err))
			return
		}
	}
	if mode == modeRecover && j.spec.Misfire.Policy == MisfireRunOnce {
		if other, note := s.outageRecovered(j, t); !other.IsZero() {
			// Another replica's recovery of this outage got there first
			// (its end wrote the history entry in the step that freed the
			// job lease now held here): run_once runs one slot.
			span.skip(history.ReasonLate)
			s.logLate(name, lateRange{first: t, last: t, count: 1}, note+slotString(other))
			s.endHandled(pendingEnd{job: name, slot: slot, lease: lease, doneTTL: j.doneTTL, note: string(history.ReasonLate), at: t,
				jobLease: jobLease,
				history:  &history.Entry{Slot: slot, Outcome: history.OutcomeSkipped, Reason: history.ReasonLate, Replica: s.cfg.Replica}}, j, t)
			return
		}
	}
	leases := []*locking.Lease{lease}
	if jobLease != nil {
		leases = append(leases, jobLease)
	}
	h, _ := s.execute(runSpec{
		j: j, slot: t, recovered: mode == modeRecover, leases: leases, parent: s.runCtx, trace: tctx,
	})
	span.ran(h)
	// The job lease is released in the same call as the slot is marked
	// done: the next slot may start at once, here or elsewhere.
	end := pendingEnd{job: name, slot: slot, lease: lease, doneTTL: j.doneTTL, note: string(h.Outcome), history: &h, at: t, jobLease: jobLease}
	if h.Outcome == history.OutcomeFailed && j.spec.PauseOnFailure > 0 {
		end.then = func() { s.spawn(func() { s.pauseOnFailure(j) }) }
	}
	s.endHandled(end, j, t)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// lostSlot logs why this replica does not run slot t, and returns the
// skip reason.
func (s *Scheduler) lostSlot(j *job, t time.Time, err error) (reason history.Reason) {
	name, slot := j.name(), slotString(t)
	var he *locking.HeldError
	switch {
	case !isSplitVote(err) && errors.As(err, &he):
		s.quorumSeen()
		reason = history.ReasonHeld
		switch {
		case he.Done:
			reason = history.ReasonDone
		case he.Claimed:
			reason = history.ReasonClaimed
		}
		s.skipped(name, slot, reason, 1, heldAttrs(err)...)
		return reason
	case errors.Is(err, locking.ErrSlowAcquire):
		// The stores answered, too slowly to leave any validity: nothing
		// was locked, so nothing ran here.
		s.skipped(name, slot, history.ReasonSlowLock, 1, "error", err.Error())
		s.noteOutage(j, t)
		return history.ReasonSlowLock
	default:
		// No majority (or a split vote that outlived the slot's freshness,
		// or a closed locker): nothing was locked, so nothing ran here.
		s.skipped(name, slot, history.ReasonNoQuorum, 1, "error", err.Error())
		s.noteOutage(j, t)
		return history.ReasonNoQuorum
	}
}
