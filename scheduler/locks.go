package scheduler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// locks is the component through which the engine takes leases: one
// call per try, under the in-flight bound and, for a scheduled claim,
// under admission (admit), retried as the caller's policy says. It keeps
// no state of its own; while the stores are known to be down (outage)
// its retries wait longer.
type locks struct {
	*engine
	admit  callAdmitter
	outage downWatch
}

// callAdmitter admits a scheduled slot's lock calls under the replica's
// capacity (admission.go): asked before each call of a scheduled claim,
// and told how long each took.
type callAdmitter interface {
	admitCall(deadline time.Time) error
	admitDone(d time.Duration, sig admitSignal)
}

// downWatch says whether the stores were last seen without a majority
// (outage.go).
type downWatch interface {
	isDown() bool
}

func newLocks(e *engine, admit callAdmitter, outage downWatch) *locks {
	return &locks{engine: e, admit: admit, outage: outage}
}

// Taking a lease: the attempt's steps (guards.go) take its claim and its
// job lease with acquire, under the retry policy the attempt gives each
// (claimPolicy, jobLeasePolicy above); replace's handover (replace.go),
// an orphan's settlement (settlement.go) and the start-up probe
// (attempt_probe.go) call it with policies of their own.

// retryPolicy says how long acquire keeps trying a key.
type retryPolicy struct {
	// splitUntil: retry a split vote (no replica reached a majority because
	// they all tried at once) after a few random milliseconds until then;
	// and a claim held by a claim not confirmed started on a majority, not
	// on every store (HeldError.Unconfirmed), after the held backoff below.
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
	// ticket (scheduled claims): the admission the attempt was started
	// with, used by the first call; later calls wait for theirs.
	ticket *ticket
	// claim: take the key with Locker.Claim (a slot: at most one run, ever)
	// instead of Acquire.
	claim bool
	// with (claims only): the job lease to take in the same step
	// (locking.With); Grant.Joined tells whether it was.
	with locking.Key
	// abort ends a retry wait (default: the scheduler's stopping). A slot
	// already won waits for its job lease until the shutdown grace ends
	// instead: it either still runs or is handed back.
	abort <-chan struct{}
	// trace carries the span the lock calls are made under (trace.go); it
	// is never canceled. Nil: none.
	trace context.Context
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
// The in-flight slot (MaxInFlight), and for a scheduled claim its
// admission (admission.go), are held only during each call, never while
// waiting to retry; a retry that admission sheds is not made.
func (lk *locks) acquire(job string, key locking.Key, p retryPolicy) (*locking.Lease, error) {
	quorumWait, heldWait := quorumBackoffMin, heldBackoffMin
	ctx := p.trace
	if ctx == nil {
		ctx = context.Background()
	}
	var last error // the previous try's, returned when a retry is not admitted
	for {
		start, err := lk.startCall(&p)
		if err != nil {
			if last != nil && errors.Is(err, errStale) {
				return nil, last // a retry not admitted in time, as one past its deadline
			}
			return nil, err
		}
		var l *locking.Lease
		switch {
		case p.claim && p.with.Name != "":
			l, err = lk.cfg.Locker.Claim(ctx, key, lk.cfg.LockTTL, locking.With(p.with))
		case p.claim:
			l, err = lk.cfg.Locker.Claim(ctx, key, lk.cfg.LockTTL)
		default:
			l, err = lk.cfg.Locker.Acquire(ctx, key, lk.cfg.LockTTL)
		}
		now := lk.clock.Now()
		<-lk.inflight
		if !p.staleAfter.IsZero() {
			lk.admit.admitDone(now.Sub(start), overloaded(err))
		}
		lk.metrics.LockAcquire(job, now.Sub(start), err)
		last = err
		var wait time.Duration
		var until time.Time
		switch {
		case err == nil:
			return l, nil
		case ownOverload(err):
			// Not sent: this replica's own queue could not send it in
			// time. Retrying would add to the overload: the slot is shed
			// (late) or the error returned.
			if !p.staleAfter.IsZero() {
				return nil, fmt.Errorf("%w: %w", errStale, err)
			}
			return nil, err
		case isSplitVote(err):
			wait, until = time.Millisecond+lk.randomN(key.String(), 4*time.Millisecond), p.splitUntil
		case errors.Is(err, locking.ErrNoQuorum) || errors.Is(err, locking.ErrSlowAcquire):
			wait, until = quorumWait+lk.randomN(key.String(), quorumWait/2+1), p.quorumUntil
			if lk.outage.isDown() {
				wait = probeEvery + lk.randomN(key.String(), probeEvery/4)
			}
			quorumWait = min(2*quorumWait, quorumBackoffMax)
		case p.claim && unconfirmedHold(err):
			// Held on a majority by a claim that no store shows started,
			// while another store does not hold it: a failed acquisition whose
			// undo is on its way (its replica's answers lost or late), or a
			// winner about to start. Asked again while the slot is fresh, or
			// a slot its only taker gave up would go unrun.
			wait, until = heldWait+lk.randomN(key.String(), heldWait/2+1), p.splitUntil
			heldWait = min(2*heldWait, heldBackoffMax)
		case heldNotDone(err) && !p.heldUntil.IsZero():
			wait, until = heldWait+lk.randomN(key.String(), heldWait/2+1), p.heldUntil
			heldWait = min(2*heldWait, heldBackoffMax)
		default:
			return nil, err
		}
		if !now.Add(wait).Before(until) {
			return nil, err
		}
		abort := p.abort
		if abort == nil {
			abort = lk.stopping
		}
		if !lk.sleep(wait, abort) {
			return nil, fmt.Errorf("%w: %w", errStopping, err)
		}
	}
}

// startCall waits for the in-flight bound and, for a scheduled claim
// (staleAfter set), for its admission first. It returns the call's start,
// or errStale (shed: the slot would be late before its answer) or
// errStopping without a call.
func (lk *locks) startCall(p *retryPolicy) (time.Time, error) {
	admitted := !p.staleAfter.IsZero()
	if admitted && !p.ticket.take() {
		if err := lk.admit.admitCall(p.staleAfter); err != nil {
			return time.Time{}, err
		}
	}
	lk.inflight <- struct{}{}
	start := lk.clock.Now()
	if !admitted {
		return start, nil
	}
	var err error
	if start.After(p.staleAfter) {
		err = errStale
	} else if lk.isStopping() {
		err = errStopping
	}
	if err != nil {
		<-lk.inflight
		lk.admit.admitDone(0, admitUnsent)
	}
	return start, err
}

// isSplitVote reports an Acquire that nobody won because the votes split.
func isSplitVote(err error) bool { return errors.Is(err, locking.ErrSplitVote) }

// unconfirmedHold reports a claim refused by a claim on a majority not
// confirmed started, not held on every store (HeldError.Unconfirmed).
func unconfirmedHold(err error) bool {
	var he *locking.HeldError
	return err != nil && !isSplitVote(err) && errors.As(err, &he) && he.Unconfirmed
}

// heldNotDone reports a refusal because another lease holds the key (not a
// done marker, not a split vote).
func heldNotDone(err error) bool {
	var he *locking.HeldError
	return err != nil && !isSplitVote(err) && errors.As(err, &he) && !he.Done
}
