package scheduler

import (
	"context"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"

	"github.com/slotlock/slotlock/locking"
)

// A slot attempt is one replica's try at one slot, as a pipeline over one
// value, the attempt:
//
//	attemptSlot ─► steps (guards.go), in order ─► verdict ─► [run (run.go)] ─► exit (end.go)
//
// Every way of trying a slot goes through it; the origin says which
// (scheduled, recovered, backfill, manual), and each step and the exit
// look at it where the origins differ. A step returns a verdict: none yet
// (the next step decides), or skip, settle, misfire, paused. When every
// step passed, the slot runs, and its outcome is the verdict. The exit
// is the one place that ends the leases, writes the slot's outcome, logs
// the event and closes the span.

// origin is why a slot is attempted.
type origin int

const (
	originScheduled origin = iota // fired on time by the loop
	originRecovered               // a missed slot run by misfire.policy run_once or run_all
	originBackfill                // a past slot run on request (RunSlot)
	originManual                  // a manual run (Trigger): no slot, the job lease alone
)

// fired reports the origins of the loop's slots: theirs move the job's
// record, count toward pause_on_failure and, lost for want of a quorum,
// are recovered when it is back.
func (o origin) fired() bool { return o == originScheduled || o == originRecovered }

// attempt is one attempt at one slot, from the claim to the exit.
type attempt struct {
	ap     *attempts
	j      *job
	name   string
	t, due time.Time // the slot and its due time (zero when manual)
	slot   string    // t as logged, or SlotManual
	origin origin
	// fresh and quorumUntil bound a fired slot's tries: it is fresh (a
	// split vote retried) until fresh, and a missing majority is retried
	// until quorumUntil (set when the attempt starts).
	fresh, quorumUntil time.Time
	caller             context.Context // backfill and manual: the caller's; its end cancels the run
	tctx               context.Context // the span's, for the lock calls and the run (nil: none)
	span               *slotSpan
	ticket             *ticket // the admission of its first claim call (scheduled slots; nil: none yet)

	claim    *locking.Lease     // the slot's claim (manual: the run's lease)
	joined   *locking.Lease     // the job lease taken with the claim, until takeJobLease takes it over
	jobLease *locking.Lease     // the job lease the run holds (overlap forbid, replace)
	permit   *locking.Lease     // the permit of the job's group the run holds (group.go)
	pause    locking.Pause      // the pause that covers the slot (verdict paused)
	orphan   *locking.Abandoned // backfill: an abandoned claim of the job to settle after the run
}

// act is what a verdict has the exit do.
type act int

const (
	actNext    act = iota // no verdict yet: the next step decides
	actRan                // the slot ran: its outcome is entry
	actRelease            // skipped, the slot not handled here: the claim is released
	actDone               // skipped, the slot handled: the claim ends with a done marker (and entry)
	actSettle             // the claim took over an abandoned run's: it is settled (settleAbandoned)
	actMisfire            // won too late to prove anything: the misfire policy decides
	actPaused             // the job's pause covers the slot
	actStopped            // the replica is shutting down: nothing won, nothing logged
)

// verdict is a step's decision, or the run's outcome.
type verdict struct {
	act    act
	reason history.Reason // the skip reason: slot.skipped's (none logged when empty) and the span's
	attrs  []any          // slot.skipped's other attributes
	entry  *history.Entry // the slot's outcome, written with its done marker (actDone, actRan)
	err    error          // what RunSlot or Trigger returns
}

// step is one guard of the pipeline.
type step func(*attempt) verdict

// steps are the guards of the attempt, in the order they run: a manual
// run's one (it has no slot, only the job lease), or a slot's. The order
// of a slot's matters, and is this one because:
//   - claim first: every other guard reads what the stores answered with
//     it, and a replica that does not win the slot has nothing to decide;
//   - abandoned next: the claim took over a run that may have started: it
//     is settled, never run again nor dropped, whatever follows says;
//   - leftover: another claim of the slot is on a minority of the stores:
//     nothing may be done or marked under this one;
//   - paused before late: a slot the job's pause covers is handled
//     (skipped, paused), never recovered as a late one; and once the
//     claim is known to be ours and unpaused, an orphan the stores
//     pointed to is settled aside;
//   - late before the history: the misfire policy, which reads the
//     history itself, decides a slot won too late;
//   - the history before the job lease: a slot it records must not wait
//     for the job lease, nor take it from the next slot;
//   - the job lease after every check that can end the attempt without
//     it: its wait holds the claim (and may be long, under replace);
//   - the runs of the other policy during a rolling change of the
//     job's overlap (guards_rolling.go) right after the job lease: runs
//     under allow hold none, so the lease alone cannot keep this slot
//     from running beside them; and a slot under allow, which takes
//     none, looks for the lease instead;
//   - run_once's outage check after the job lease: it needs it held,
//     since the replica that recovered the outage first wrote its entry
//     in the step that freed it;
//   - the group's permit last (group.go): a slot that any other step
//     ends takes none from the jobs that share it.
func (a *attempt) steps() []step {
	if a.origin == originManual {
		return []step{(*attempt).runLease, (*attempt).takePermit}
	}
	return []step{
		(*attempt).claimSlot,
		(*attempt).abandoned,
		(*attempt).leftover,
		(*attempt).paused,
		(*attempt).orphans,
		(*attempt).late,
		(*attempt).recorded,
		(*attempt).takeJobLease,
		allowRuns,
		leaseRuns,
		(*attempt).outageRecovered,
		(*attempt).takePermit,
	}
}

// attemptSlot tries slot t of j for origin o (a manual run: t zero) and,
// when every step passes, runs it; caller is the caller's context for a
// backfill or manual run (nil otherwise). It returns the run's history
// entry, nil when it did not run, and what RunSlot or Trigger returns.
func (ap *attempts) attemptSlot(j *job, t time.Time, o origin, caller context.Context) (*history.Entry, error) {
	return ap.attemptSlotWith(j, t, o, caller, nil)
}

// attemptSlotWith is attemptSlot for a slot admitted already (tk: its
// first claim call is sent under that admission, admission.go).
func (ap *attempts) attemptSlotWith(j *job, t time.Time, o origin, caller context.Context, tk *ticket) (*history.Entry, error) {
	if o.fired() && ap.isStopping() {
		return nil, nil // a replica that is shutting down acquires no new slot
	}
	a := ap.newAttempt(j, t, o)
	a.caller, a.ticket = caller, tk
	a.tctx, a.span = ap.traceSlot(caller, a.name, a.slot, o)
	var v verdict
	for _, st := range a.steps() {
		if v = st(a); v.act != actNext {
			break
		}
	}
	if v.act == actNext {
		v = a.run()
	}
	a.exit(v)
	if v.act == actRan {
		return v.entry, v.err
	}
	return nil, v.err
}

// newAttempt is an attempt at slot t of j, not started.
func (ap *attempts) newAttempt(j *job, t time.Time, o origin) *attempt {
	a := &attempt{ap: ap, j: j, name: j.name(), t: t, slot: SlotManual, origin: o}
	if o == originManual {
		return a
	}
	a.slot, a.due = slotString(t), j.dueAt(t)
	switch o {
	case originScheduled:
		a.fresh = a.due.Add(ap.lateness)
		a.quorumUntil = a.fresh
	case originRecovered:
		// Fresh until its misfire deadline; a missing majority is retried
		// for as long as a normal firing would, and the slot recovered
		// again when the quorum is back.
		a.fresh = a.due.Add(j.spec.Misfire.Deadline)
		a.quorumUntil = minTime(a.fresh, ap.clock.Now().Add(ap.lateness))
	}
	return a
}

// claimPolicy is how long the slot's claim is tried: a fired slot while
// it is fresh (a scheduled one is not even asked for once it is late, or
// the replica stopping, and each of its calls is admitted (admission.go):
// an overloaded replica sheds the slots that cannot be answered before
// they turn late, before any call), a backfill's for the lateness bound; under forbid a fired slot
// takes the job lease in the same call, where it is free.
func (a *attempt) claimPolicy() retryPolicy {
	p := retryPolicy{splitUntil: a.fresh, quorumUntil: a.quorumUntil, claim: true, trace: a.tctx}
	switch a.origin {
	case originScheduled:
		p.staleAfter, p.ticket = a.fresh, a.ticket
	case originBackfill:
		until := a.ap.clock.Now().Add(a.ap.lateness)
		p.splitUntil, p.quorumUntil = until, until
	}
	if a.origin.fired() && a.j.spec.Overlap == OverlapForbid {
		p.with = history.RunKey(a.name)
	}
	return p
}

// jobLeasePolicy is how long the job lease is asked for: a run of an
// earlier slot may still hold it — often one that a replica with a slower
// clock started late in real time. A fired slot asks until its freshness
// (but no longer than half the claim's ttl: it is not renewed while we
// wait), and is skipped for overlap only if it is still held then: a
// slot is not dropped for a run that ends a moment after it fired. A
// shutdown meanwhile does not drop the slot: the wait goes on until the
// grace ends, and then the slot is handed back unmarked. A backfill asks
// for the lateness bound, a held lease for half a lock ttl.
func (a *attempt) jobLeasePolicy() retryPolicy {
	now := a.ap.clock.Now()
	if a.origin == originBackfill {
		until := now.Add(a.ap.lateness)
		return retryPolicy{splitUntil: until, quorumUntil: until, heldUntil: now.Add(a.ap.cfg.LockTTL / 2)}
	}
	return retryPolicy{splitUntil: a.fresh, quorumUntil: a.quorumUntil,
		heldUntil: minTime(a.quorumUntil, now.Add(a.ap.cfg.LockTTL/2)), abort: a.ap.runCtx.Done(), trace: a.tctx}
}

// leases are the job's leases the run holds: the claim, then the job
// lease (the fencing token is the last one's). held adds the permit.
func (a *attempt) leases() []*locking.Lease {
	if a.jobLease != nil {
		return []*locking.Lease{a.claim, a.jobLease}
	}
	return []*locking.Lease{a.claim}
}

// held is every lease the run holds, each kept and started alike: the
// job's, then the group's permit, whose token is not the job's.
func (a *attempt) held() []*locking.Lease {
	if a.permit == nil {
		return a.leases()
	}
	return append(a.leases(), a.permit)
}

// nextMayFire is the earliest instant, on this replica's clock, at which
// another replica may fire the first slot of j due after t: that due time
// less MaxClockSkew (far in the future when the schedule has no slot
// left). Due times are in slot order, so for t the due time of slot T it
// is about T's next slot.
func (ap *attempts) nextMayFire(j *job, t time.Time) time.Time {
	_, due := j.spec.NextDue(t)
	if due.IsZero() {
		return time.Unix(1<<40, 0)
	}
	return due.Add(-ap.cfg.MaxClockSkew)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// shed is the exit of a scheduled slot shed before any lock call: the
// misfire policy decides it (under skip, its slot.skipped late line). A
// policy that recovers waits for the slot's recovery time: on a goroutine
// of its own, never the caller's (the loop, or a claim's).
func (ap *attempts) shed(j *job, t time.Time) {
	shed := func() {
		a := ap.newAttempt(j, t, originScheduled)
		a.tctx, a.span = ap.traceSlot(nil, a.name, a.slot, originScheduled)
		a.exit(verdict{act: actMisfire, reason: history.ReasonLate})
	}
	if j.spec.Misfire.Policy.recovers() {
		ap.spawn(shed)
		return
	}
	shed()
}
