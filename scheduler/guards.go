package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"

	"github.com/slotlock/slotlock/locking"
)

// The steps of a slot attempt (attempt.go says why in this order). Each
// returns actNext to let the next one decide, or the verdict the exit
// carries out (end.go).

var goOn = verdict{}

// claimSlot wins the slot's claim. A recovered slot that looks held is
// looked at again while its deadline allows.
func (a *attempt) claimSlot() verdict {
	ap := a.ap
	p := a.claimPolicy()
	lease, err := ap.locks.acquire(a.name, history.SlotKey(a.name, a.t), p)
	for a.origin == originRecovered && heldNotDone(err) {
		// A missed slot that looks held: a replica recovering it too (its
		// done marker follows), or a lock attempt that a frozen node
		// executed when it resumed, after its sender had given up and
		// undone it elsewhere (it expires within LockTTL). Look again
		// while the deadline allows.
		wait := ap.cfg.LockTTL / 3
		if ap.clock.Now().Add(wait).Sub(a.due) > a.j.spec.Misfire.Deadline {
			break
		}
		ap.log.Debug("missed slot held; trying again", "event", evMisfireCheck, "job", a.name, "slot", a.slot,
			"error", err.Error(), "retry_in", wait.String())
		if !ap.sleep(wait, ap.stopping) {
			return verdict{act: actStopped, reason: history.ReasonShutdown}
		}
		lease, err = ap.locks.acquire(a.name, history.SlotKey(a.name, a.t), p)
	}
	if err != nil {
		return a.claimRefused(err)
	}
	a.claim = lease
	if a.origin.fired() {
		ap.outage.quorumSeen()
		// The job lease taken with the claim: released at the exit unless
		// the run takes it over.
		a.joined = lease.Grant().Joined
	}
	return goOn
}

// claimRefused is the verdict on a claim that could not be had.
func (a *attempt) claimRefused(err error) verdict {
	if a.origin == originBackfill {
		var he *locking.HeldError
		if isSplitVote(err) || !errors.As(err, &he) {
			return verdict{act: actRelease, err: fmt.Errorf("scheduler: backfill %s %s: %w", a.name, a.slot, err)}
		}
		why, reason := "running", history.ReasonHeld
		if he.Done {
			why, reason = string(history.ReasonDone), history.ReasonDone
		}
		return verdict{act: actRelease, reason: reason, attrs: heldAttrs(err), err: &HandledError{Slot: a.t, Reason: why}}
	}
	switch {
	case errors.Is(err, errStopping):
		return verdict{act: actStopped, reason: history.ReasonShutdown}
	case errors.Is(err, errStale):
		return verdict{act: actMisfire, reason: history.ReasonLate}
	case errors.Is(err, locking.ErrPaused):
		var pe *locking.PausedError
		errors.As(err, &pe)
		if pe.Refusal != nil && !pe.Pause.Covers(a.due) {
			// Paused after the slot was due, and the key is held: a run
			// of the slot going on since before the pause, not a paused
			// slot (a paused entry would stand beside its outcome).
			return a.lost(pe.Refusal)
		}
		a.pause = pe.Pause
		return verdict{act: actPaused, reason: history.ReasonPaused}
	}
	return a.lost(err)
}

// lost is the verdict on a slot this replica does not run for err: held
// by another replica (held, done, claimed), this replica's own overload
// (late, handed to the misfire policy: the nodes are healthy, so it is
// no outage), or no majority (slow_lock, no_quorum: the exit notes the
// outage).
func (a *attempt) lost(err error) verdict {
	var he *locking.HeldError
	switch {
	case ownOverload(err):
		return verdict{act: actMisfire, reason: history.ReasonLate, attrs: []any{"error", err.Error()}}
	case !isSplitVote(err) && errors.As(err, &he):
		if !he.Done && !he.Claimed {
			// Only a plain refusal is a majority's answer: a done marker
			// refuses from any one store, and Claimed is a claim found on
			// a minority while others were silent. Either may come in the
			// middle of an outage, and an outage seen over there would
			// hand the misfire policy a latest missed slot that is not
			// the outage's last.
			a.ap.outage.quorumSeen()
		}
		reason := history.ReasonHeld
		switch {
		case he.Done:
			reason = history.ReasonDone
		case he.Claimed:
			reason = history.ReasonClaimed
		}
		return verdict{act: actRelease, reason: reason, attrs: heldAttrs(err)}
	case errors.Is(err, locking.ErrSlowAcquire):
		// The stores answered, too slowly to leave any validity: nothing
		// was locked, so nothing ran here.
		return verdict{act: actRelease, reason: history.ReasonSlowLock, attrs: []any{"error", err.Error()}}
	default:
		// No majority (or a split vote that outlived the slot's freshness,
		// or a closed locker): nothing was locked, so nothing ran here.
		return verdict{act: actRelease, reason: history.ReasonNoQuorum, attrs: []any{"error", err.Error()}}
	}
}

// abandoned settles a claim that took over a run that never ended.
func (a *attempt) abandoned() verdict {
	ab := a.claim.Grant().Abandoned
	if ab == nil {
		return goOn
	}
	v := verdict{act: actSettle}
	if a.origin == originBackfill {
		why := string(history.OutcomeAbandoned)
		if !ab.Started {
			why = string(history.ReasonUnknown) + ", may have started"
		}
		v.err = &HandledError{Slot: a.t, Reason: why}
	}
	return v
}

// leftover hands the slot back when another claim of it is on a minority
// of the stores: not ours to run under. The leftover is cleared when a
// later claim of the job is pointed to it.
func (a *attempt) leftover() verdict {
	if !a.claim.Grant().Leftover {
		return goOn
	}
	v := verdict{act: actRelease, reason: history.ReasonClaimed, attrs: []any{"note", "a claim of the slot is on a minority of the stores"}}
	if a.origin == originBackfill {
		v.err = fmt.Errorf("scheduler: backfill %s %s: a claim of the slot is on a minority of the stores (it may have started): %w",
			a.name, a.slot, locking.ErrNotAcquired)
	}
	return v
}

// paused skips a fired slot due while the job was paused, claimed after
// the pause ended (a recovery): still paused, also when a resume ended
// the pause (it is in the register's past). A backfill refuses a slot
// due during any pause the register holds, past ones included: the
// operator paused it (PlanBackfill says so too).
func (a *attempt) paused() verdict {
	if a.origin == originBackfill && a.claim.Grant().Pause.PausedAt(a.j.spec.Due(a.t)) {
		return verdict{act: actRelease, reason: history.ReasonPaused,
			err: &HandledError{Slot: a.t, Reason: string(history.ReasonPaused)}}
	}
	if !a.origin.fired() {
		return goOn
	}
	if p := a.claim.Grant().Pause; p.PausedAt(a.due) {
		a.pause = p
		return verdict{act: actPaused, reason: history.ReasonPaused}
	}
	a.ap.control.notePause(a.j, locking.Pause{})
	return goOn
}

// orphans settles the abandoned claim of the job that the stores pointed
// out with the claim: aside for a fired slot, after the run for a
// backfill (its process may exit next).
func (a *attempt) orphans() verdict {
	o := a.claim.Grant().Orphan
	switch {
	case o == nil:
	case a.origin == originBackfill:
		a.orphan = o
	default:
		a.ap.spawn(func() { a.ap.settlement.settleOrphan(a.j, o) })
	}
	return goOn
}

// late hands a scheduled slot won so late that its done marker might
// already have expired to the misfire policy, which checks the slot's
// marker: the win proves nothing.
func (a *attempt) late() verdict {
	if a.origin == originScheduled && a.ap.clock.Now().Sub(a.due) > a.ap.lateness+acquireSlack {
		return verdict{act: actMisfire, reason: history.ReasonLate}
	}
	return goOn
}

// recorded asks the slot history about a slot won so long after it (a
// recovery, a large jitter) that a replica's done marker of it may have
// expired (outcomes_history.go), and about every backfill: a slot it records,
// or one it cannot tell, is not run; one with no entry the backfill judges
// missed first (backfill_missed.go).
func (a *attempt) recorded() verdict {
	ap := a.ap
	if a.origin != originBackfill && ap.clock.Now().Sub(a.t) <= ap.markerSafe() {
		return goOn
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	e, found, err := ap.outcomes.slotRecorded(ctx, a.name, a.t)
	cancel()
	if a.origin == originBackfill {
		switch {
		case err != nil:
			return backfillHistoryErr(a.name, a.t, err)
		case found && !backfillable(&e):
			return recordedAlready(a.t, e)
		case !found:
			return a.missedBeforeBackfill()
		}
		return goOn
	}
	switch {
	case errors.Is(err, ErrNoHistory):
		return goOn // the claim is all there is to go by (docs/concepts.md, "Jitter")
	case err == nil && !found:
		return goOn
	case err == nil:
		return verdict{act: actDone, reason: history.ReasonDone,
			attrs: []any{"outcome", e.Outcome, "note", "the slot history records it; its done marker had expired"}}
	case errors.Is(err, errHistoryShort):
		return verdict{act: actRelease, reason: history.ReasonLate,
			attrs: []any{"note", "its done marker may have expired and the slot history no longer reaches it: not run"}}
	}
	return a.lost(err)
}

// takeJobLease takes the job lease the run holds (overlap forbid or
// replace): the one taken with the claim, else asked for (jobLeasePolicy;
// under replace the run going on is asked to stop, and waited for
// longer: replace.go). Held still, the slot is skipped for overlap.
func (a *attempt) takeJobLease() verdict {
	ap := a.ap
	switch {
	case a.origin == originBackfill:
		return a.backfillJobLease()
	case a.joined != nil:
		a.jobLease, a.joined = a.joined, nil
		ap.outage.flushPending(a.name)
		return goOn
	case a.j.spec.Overlap == OverlapAllow && !inRollingWindow(a, leaseRunsWindow):
		return goOn
	}
	// Under allow, within the window of a rolling change (guards_rolling.go),
	// the slot takes the job lease as under forbid.
	ap.outage.flushPending(a.name)
	var err error
	if a.j.spec.Overlap == OverlapReplace {
		a.jobLease, err = ap.replaceJobLease(a.name, a.t, ap.nextMayFire(a.j, a.due), a.claim, a.tctx)
	} else {
		a.jobLease, err = ap.locks.acquire(a.name, history.RunKey(a.name), a.jobLeasePolicy())
	}
	if err == nil {
		return goOn
	}
	if by := replacedBy(err); by != "" {
		return verdict{act: actDone, reason: history.ReasonReplaced, attrs: []any{"by_slot", by},
			entry: &history.Entry{Slot: a.slot, Outcome: history.OutcomeSkipped, Reason: history.ReasonReplaced, BySlot: by, Replica: ap.cfg.Replica}}
	}
	if errors.Is(err, errStopping) {
		return verdict{act: actRelease, reason: history.ReasonShutdown, attrs: []any{"error", err.Error()}}
	}
	if errors.Is(err, locking.ErrNotAcquired) {
		return verdict{act: actDone, reason: history.ReasonOverlap, attrs: heldAttrs(err), entry: a.skippedEntry(history.ReasonOverlap)}
	}
	// The slot is lost here; the others saw our claim as held.
	return a.lost(err)
}

// backfillJobLease takes the job lease of a backfill under forbid and
// replace (a backfill replaces no run: it waits as under forbid). Held,
// the slot is not run: a later backfill may run it.
func (a *attempt) backfillJobLease() verdict {
	if a.j.spec.Overlap == OverlapAllow {
		return goOn
	}
	if a.j.spec.Overlap == OverlapReplace {
		// The claim is renewed while the backfill yields.
		kctx := a.claim.Keep(a.ap.runCtx)
		if err := a.ap.yieldToWaitingSlot(a.j, a.t, kctx.Done()); err != nil {
			err = a.ap.waitEnded(kctx, err)
			v := a.lost(err)
			if errors.Is(err, errStopping) {
				v.reason = history.ReasonShutdown
			}
			v.err = fmt.Errorf("scheduler: backfill %s %s: job lease: %w", a.name, a.slot, err)
			return v
		}
	}
	jl, err := a.ap.locks.acquire(a.name, history.RunKey(a.name), a.jobLeasePolicy())
	if err == nil {
		a.jobLease = jl
		return goOn
	}
	v := verdict{act: actRelease, err: fmt.Errorf("scheduler: backfill %s %s: job lease: %w", a.name, a.slot, err)}
	if !isSplitVote(err) && errors.Is(err, locking.ErrNotAcquired) {
		v.reason, v.attrs = history.ReasonOverlap, heldAttrs(err)
	}
	return v
}

// outageRecovered skips a slot recovered under run_once when another
// replica's recovery of the same outage got there first (its end wrote
// the history entry in the step that freed the job lease now held here):
// run_once runs one slot an outage (misfire_outage.go).
func (a *attempt) outageRecovered() verdict {
	if a.origin != originRecovered || a.j.spec.Misfire.Policy != MisfireRunOnce {
		return goOn
	}
	other, note := a.ap.misfire.outageRecovered(a.j, a.t)
	if other.IsZero() {
		return goOn
	}
	return verdict{act: actDone, reason: history.ReasonLate, attrs: []any{"missed", 1, "note", note + slotString(other)},
		entry: a.skippedEntry(history.ReasonLate)}
}

// skippedEntry is the history entry of the slot skipped here for reason.
func (a *attempt) skippedEntry(reason history.Reason) *history.Entry {
	return &history.Entry{Slot: a.slot, Outcome: history.OutcomeSkipped, Reason: reason, Replica: a.ap.cfg.Replica}
}

// runLease is a manual run's only step: it takes the job lease of a
// scheduled run unless the job allows overlap, and otherwise a lease of
// its own, so that the run gets a fencing token above every earlier run
// of the job. Held, the manual run fails (a manual run replaces nothing).
func (a *attempt) runLease() verdict {
	ap := a.ap
	key := history.RunKey(a.name)
	if a.j.spec.Overlap == OverlapAllow {
		key = history.ManualKey(a.name, strconv.FormatUint(ap.random(history.RunKey(a.name).String()), 16))
	}
	until := ap.clock.Now().Add(time.Second)
	lease, err := ap.locks.acquire(a.name, key, retryPolicy{splitUntil: until, quorumUntil: until, trace: a.tctx})
	switch {
	case err == nil:
		a.claim = lease
		return goOn
	case !isSplitVote(err) && errors.Is(err, locking.ErrNotAcquired):
		return verdict{act: actRelease, reason: history.ReasonOverlap, attrs: heldAttrs(err),
			err: fmt.Errorf("scheduler: trigger %s: another run of the job is going on: %w", a.name, err)}
	}
	return verdict{act: actRelease, reason: history.ReasonNoQuorum, attrs: []any{"error", err.Error()},
		err: fmt.Errorf("scheduler: trigger %s: %w", a.name, err)}
}
