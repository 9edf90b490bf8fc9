package scheduler

import (
	"context"
	"errors"
	"fmt"
	"github.com/slotlock/slotlock/scheduler/history"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// Overlap replace: a newer slot takes over from the run still going on,
// on whichever replica it runs, under the job lease (so runs never
// overlap and their fencing tokens increase in start order, as under
// forbid). The replicas talk through one record of the job's family,
// <job>/replace (locking.Store.AdvanceRecord: max-assign on a majority,
// no TTL), which holds the newest slot (Unix seconds) that asked for the
// job lease:
//
//  1. The winner of slot T raises the record to T once it holds T's claim,
//     before it asks for the job lease — every slot, not only when the
//     lease is held, so that a slot still waiting for the lease can tell
//     that a newer one came (step 4).
//  2. A run of slot R watches the record (watchReplace): every
//     replacePollEvery from the next slot's due time less max_clock_skew
//     (when another replica may fire it), every lock.ttl/3 before. When the
//     record names a slot later than R it cancels the run with a
//     *ReplacedError (ErrReplaced). The run ends as any canceled run:
//     run.canceled reason replaced with by_slot, the slot done with the
//     history entry canceled/replaced, the job lease released.
//  3. The winner of T asks for the job lease until it is free (its claim
//     kept alive meanwhile by the watchdog), at most ReplaceWait: lock.ttl
//     + the lateness bound L. A run that returned frees it at once; a run
//     whose replica died, froze or lost the stores cannot renew it, and
//     the lease expires at most lock.ttl after its last renewal; L covers
//     the retry backoff and the round trips. T then starts with a token
//     above the old run's. If the lease is still held at the bound — the
//     old run's replica is alive but its plugin ignores the cancellation
//     that long — T is skipped with reason overlap, as under forbid.
//  4. A waiting slot that sees the record pass T (a newer slot asked while
//     T waited) gives up: slot.skipped reason replaced with by_slot, T done
//     with the history entry skipped/replaced. It looks again once it holds
//     the job lease (when it waited, or when the next slot may have fired),
//     so an older slot never starts after a newer one asked.
//
// The wait comes after the lateness checks, which the slot passed when it
// was claimed: it delays the start (start_delay counts it) but does not
// make the slot late, and the slot's claim covers it against every other
// replica's attempt (done markers count from the run's end). A manual run
// (Trigger) of a replace job holds the job lease like a forbid one, asks
// nothing, and is replaced by a slot later than its start.

// ReplacedError is the cause of a replaced run's context, and the error of
// a slot that a newer one replaced before it started: errors.Is(err,
// ErrReplaced) holds.
type ReplacedError struct {
	By time.Time // the newer slot
}

func (e *ReplacedError) Error() string { return ErrReplaced.Error() + " " + slotString(e.By) }

func (e *ReplacedError) Is(target error) bool { return target == ErrReplaced }

// replacedBy returns the slot named by a *ReplacedError cause, "" for any
// other cause.
func replacedBy(cause error) string {
	var re *ReplacedError
	if errors.As(cause, &re) {
		return slotString(re.By)
	}
	return ""
}

const (
	// replacePollEvery: how often a run of a replace job reads the record
	// once a newer slot may have fired. It bounds how long the newer slot
	// waits for a run that cooperates (plus the plugin's own exit time).
	replacePollEvery = 200 * time.Millisecond
	// replaceCheckEvery: how often a slot waiting for the job lease reads
	// the record to see whether a newer slot came.
	replaceCheckEvery = 250 * time.Millisecond
)

// replaceWait is the longest a slot of an overlap: replace job waits for
// the job lease held by the run it replaces: LockTTL + Lateness. An
// unrenewed lease expires within LockTTL; Lateness is the margin.
func (ap *attempts) replaceWait() time.Duration { return ap.cfg.LockTTL + ap.lateness }

// requestReplace raises the job's replace record to slot t.
func (ap *attempts) requestReplace(job string, t time.Time) error {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	ap.inflight <- struct{}{}
	defer func() { <-ap.inflight }()
	return ap.cfg.Locker.AdvanceRecord(ctx, history.ReplaceKey(job), t.Unix())
}

// readReplace returns the slot that the job's replace record names: the
// newest slot that asked for the job lease (zero when none, or when the
// record cannot be read: then the lease decides alone).
func (ap *attempts) readReplace(ctx context.Context, job string) time.Time {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	ap.inflight <- struct{}{}
	rec, err := ap.cfg.Locker.ReadRecord(ctx, history.ReplaceKey(job))
	<-ap.inflight
	if err != nil || rec <= 0 {
		return time.Time{}
	}
	return time.Unix(rec, 0).UTC()
}

// newerSlot is a *ReplacedError when the job's replace record names a
// slot later than t, else nil.
func (ap *attempts) newerSlot(ctx context.Context, job string, t time.Time) error {
	if by := ap.readReplace(ctx, job); by.After(t) {
		return &ReplacedError{By: by}
	}
	return nil
}

// replaceJobLease takes the job lease for slot t of replace job name,
// whose claim is claim (steps 1, 3 and 4 above); checkFrom is when
// another replica may fire the next slot (before it, a first try that
// wins needs no look at the record). It returns the lease, or a
// *ReplacedError when a newer slot asked meanwhile, or the last error of
// the wait: a *locking.HeldError when the lease was still held at the
// bound, an error wrapping errStopping when the shutdown grace ended, one
// wrapping locking.ErrLockLost when the claim could not be kept.
func (ap *attempts) replaceJobLease(name string, t, checkFrom time.Time, claim *locking.Lease, trace context.Context) (*locking.Lease, error) {
	requested := ap.requestReplace(name, t) == nil
	// The claim is renewed while we wait; kctx also ends with the grace.
	kctx := claim.Keep(ap.runCtx)
	deadline := ap.clock.Now().Add(ap.replaceWait())
	waited := false
	for {
		if !requested {
			requested = ap.requestReplace(name, t) == nil
		}
		until := minTime(deadline, ap.clock.Now().Add(replaceCheckEvery))
		jl, err := ap.locks.acquire(name, history.RunKey(name), retryPolicy{splitUntil: until, quorumUntil: until,
			heldUntil: until, abort: kctx.Done(), trace: trace})
		if err == nil {
			if waited || !ap.clock.Now().Before(checkFrom) {
				if rerr := ap.newerSlot(kctx, name, t); rerr != nil {
					ap.outcomes.endLease(name, slotString(t), jl, 0, "")
					return nil, rerr
				}
			}
			return jl, nil
		}
		if errors.Is(err, errStopping) {
			return nil, ap.waitEnded(kctx, err)
		}
		if !retryable(err) {
			return nil, err
		}
		waited = true
		if !ap.clock.Now().Before(deadline) {
			return nil, err
		}
		if rerr := ap.newerSlot(kctx, name, t); rerr != nil {
			return nil, rerr
		}
		// acquire returns when its next try would pass until (or at once,
		// after an outage's longer backoff): wait for until, so that each
		// round takes replaceCheckEvery however the stores answer.
		if !ap.sleep(until.Sub(ap.clock.Now()), kctx.Done()) {
			return nil, ap.waitEnded(kctx, fmt.Errorf("%w: %w", errStopping, err))
		}
	}
}

// waitEnded is the error of a replace wait that kctx ended: the claim
// lost (the stores could not renew it), or the shutdown grace over.
func (ap *attempts) waitEnded(kctx context.Context, err error) error {
	if cause := context.Cause(kctx); errors.Is(cause, locking.ErrLockLost) {
		return fmt.Errorf("scheduler: the slot's claim was lost while waiting for the job lease: %w", cause)
	}
	return err
}

// retryable reports an acquisition error that a replace wait retries.
func retryable(err error) bool {
	return heldNotDone(err) || isSplitVote(err) || errors.Is(err, locking.ErrNoQuorum) ||
		errors.Is(err, locking.ErrSlowAcquire)
}

// watchReplace cancels the run of job name with a *ReplacedError once
// the job's replace record names a slot that newer says replaces it (step
// 2 above); it polls every replacePollEvery from fastFrom, when another
// replica may fire the next slot, and less often before. It returns when
// ctx, the run's context, ends.
func (ap *attempts) watchReplace(ctx context.Context, cancel context.CancelCauseFunc, name string, fastFrom time.Time,
	newer func(by time.Time) bool) {
	for {
		wait := replacePollEvery
		if now := ap.clock.Now(); now.Before(fastFrom) {
			wait = min(max(ap.cfg.LockTTL/3, replacePollEvery), fastFrom.Sub(now))
		}
		if !ap.sleep(wait, ctx.Done()) {
			return
		}
		if by := ap.readReplace(ctx, name); newer(by) {
			cancel(&ReplacedError{By: by})
			return
		}
	}
}

// handledSlot reports whether a store shows slot t of job handled (its
// done marker: Locker.Handled, a hint); false when it cannot tell.
func (ap *attempts) handledSlot(job string, t time.Time) bool {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	done, err := ap.cfg.Locker.Handled(ctx, []locking.Key{history.SlotKey(job, t)})
	return err == nil && len(done) == 1 && done[0]
}

// yieldToWaitingSlot lets a scheduled slot of replace job name that is
// newer than backfilled slot t and asked for the job lease (the replace
// record names it) go first: while that slot may still be waiting for the
// lease (within replaceWait of its due time) and no store shows it
// handled, the backfill waits, so that it does not take the lease the
// moment its previous run let it go. A backfilled run is replaced only by
// a slot due after it started, so one that took the lease here would keep
// the waiting slot out until its wait ran out (skipped overlap).
func (ap *attempts) yieldToWaitingSlot(j *job, t time.Time, abort <-chan struct{}) error {
	name := j.name()
	for {
		by := ap.readReplace(context.Background(), name)
		if !by.After(t) {
			return nil
		}
		now := ap.clock.Now()
		waitEnd := j.spec.Due(by).Add(ap.replaceWait())
		if !now.Before(waitEnd) {
			return nil
		}
		if ap.handledSlot(name, by) {
			return nil
		}
		if !ap.sleep(min(replaceCheckEvery, waitEnd.Sub(now)), abort) {
			return errStopping
		}
	}
}
