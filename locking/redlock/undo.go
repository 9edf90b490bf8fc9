package redlock

import (
	"context"
	"strings"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/internal/wire"
)

// Undoing what an acquisition set: a failed acquisition everywhere it
// wrote or may have written, with tombstones where it went unanswered,
// and the job lease of a joint claim (Claim With) that is not granted.

// undo releases s where it is held (or may be, after an unanswered
// request), on the masked nodes (all when mask is nil). It runs detached
// from ctx's cancellation: a canceled acquisition must still clean up.
//
// A node that did not answer the acquisition (unanswered[i] set) may still
// run it later, after this undo (a frozen node that resumes runs what had
// queued on its connections in no set order): there the undo leaves a
// tombstone of s's value for s's ttl, and the acquire script refuses a
// value with a tombstone, so a late acquisition leaves nothing behind.
//
// The undo is made sure of (undoLater): a node that does not answer it
// may hold the value — a frozen node runs the acquisition when it resumes,
// while the undo, queued behind it, may never have been written (the
// pipeline that timed out closed its connection, and a new one cannot be
// set up with a frozen node). A claim of a failed acquisition left on a
// majority would be taken, once its lease expired, for a run that may
// have started; a plain lease (a job lease) left on a majority keeps
// every contender out for its TTL — a forbid job's slots after the
// outage skipped for a run that does not exist. So where the acquisition
// may have landed on a majority, the undo is sent again, in the
// background, to every node that did not answer it, until each has.
func (r *redlock) undo(ctx context.Context, s driver.Lease, mask []bool, unanswered []error) {
	// A node the acquisition was never sent to (unsent) holds nothing of
	// it: there is nothing to undo.
	masked := func(i int) bool {
		return (mask == nil || mask[i]) && (unanswered == nil || !unsent(unanswered[i]))
	}
	nothing := true
	for i := range r.nodes {
		nothing = nothing && !masked(i)
	}
	if nothing {
		// Refused everywhere it was sent (a claim lost to a live lease
		// or a done marker): no node to undo on, no round to make.
		return
	}
	op := r.releaseOp(s)
	if s.Claim && s.Also != nil {
		op.Also, op.AlsoValue = r.key(s.Also.Key), s.Also.Value
	}
	tomb := op
	tomb.Tomb, tomb.TombTTL = r.tombKey(s), msec(s.TTL)
	res := make([]driver.Result, len(r.nodes))
	errs := make([]error, len(r.nodes))
	r.round(context.WithoutCancel(ctx), func(i int) (driver.Op, bool) {
		if unanswered != nil && unanswered[i] != nil {
			return tomb, masked(i)
		}
		return op, masked(i)
	}, res, errs)
	// Where the undo missed a node, the value may be left there: say on
	// the others that it was given up (released.go).
	if !s.Claim {
		r.noteReleased(ctx, s, errs)
	} else if s.Also != nil {
		r.noteReleased(ctx, *s.Also, errs)
	}
	maybe, pending := 0, make([]bool, len(r.nodes))
	anyPending := false
	for i := range r.nodes {
		if masked(i) {
			maybe++
			pending[i] = errs[i] != nil
			anyPending = anyPending || pending[i]
		}
	}
	// A value that cannot have landed on a majority can never be taken
	// for a started run, nor keep a contender out (at most a leftover,
	// which a contender takes over: released.go); others are made sure of.
	if anyPending && maybe >= r.quorum {
		r.undoLater(s, tomb, pending)
	}
}

// undoFor bounds how long undoLater keeps sending an undo, in lease TTLs:
// by then a node that still does not answer is down or cut off, and a
// claim on it is taken over (and reported as not confirmed started) by
// the next replica that reaches a majority holding it.
const undoFor = 4

// undoLater sends tomb (an undo with its tombstone) again to the pending
// nodes, with a backoff from twice the op timeout up to one second, until
// each has answered, undoFor TTLs have passed, or the locker closes. It
// runs in the background: the failed acquisition returns at once.
func (r *redlock) undoLater(s driver.Lease, tomb driver.Op, pending []bool) {
	r.bg.Add(1)
	go func() {
		defer r.bg.Done()
		until := r.clock.Now().Add(undoFor * s.TTL)
		wait := 2 * r.opTimeout
		timer := r.clock.NewTimer(wait)
		defer timer.Stop()
		res := make([]driver.Result, len(r.nodes))
		errs := make([]error, len(r.nodes))
		for {
			select {
			case <-r.quit:
				return
			case <-timer.C():
			}
			clear(errs)
			r.round(context.Background(), func(i int) (driver.Op, bool) { return tomb, pending[i] }, res, errs)
			left := false
			for i := range pending {
				pending[i] = pending[i] && errs[i] != nil
				left = left || pending[i]
			}
			if !left || !r.clock.Now().Before(until) {
				return
			}
			wait = min(2*wait, time.Second)
			timer.Reset(wait)
		}
	}()
}

// tombKey is where an undo leaves s's tombstone: under s's family, named
// by its value's random token.
func (r *redlock) tombKey(s driver.Lease) string {
	tok, _, _ := strings.Cut(s.Value, "|")
	return r.key(locking.Key{Family: s.Key.Family, Name: wire.TombPrefix + tok})
}

// jointFresh is the allowance, beyond the op timeout, for the clocks of
// the locker and a node to differ when the node judges whether a joint
// acquisition is fresh. A clock ahead by more only lets a late request
// set a job lease (as without the check); one behind by more only makes
// the caller take the job lease alone.
const jointFresh = time.Second

// joint decides the lease s.also that a granted claim s took in the same
// step: it is g's too, with g's token, where it was set on a majority and
// the claim is this lease's own (not taken over); otherwise it is undone
// wherever it was set or may have been, and the caller takes it alone.
func (r *redlock) joint(ctx context.Context, s driver.Lease, g *driver.Grant, res []driver.Result, errs []error) {
	if s.Also == nil {
		return
	}
	won, touched := 0, false
	for i, rep := range res {
		if errs[i] == nil && rep.AlsoStatus == 1 {
			won++
		}
		touched = touched || (errs[i] != nil && !unsent(errs[i])) || rep.AlsoStatus == 1
	}
	if won >= r.quorum && g.Abandoned == nil && !g.Leftover {
		g.Joined = true
		return
	}
	if !touched {
		return
	}
	// The claim stays; only the lease taken with it is undone, with a
	// tombstone of the claim's value where the acquisition went
	// unanswered (undo), so that a late run of it sets nothing.
	op := r.releaseOp(*s.Also)
	tomb := op
	tomb.Tomb, tomb.TombTTL = r.tombKey(s), msec(s.TTL)
	ures := make([]driver.Result, len(r.nodes))
	uerrs := make([]error, len(r.nodes))
	r.round(context.WithoutCancel(ctx), func(i int) (driver.Op, bool) {
		if errs[i] != nil {
			return tomb, !unsent(errs[i])
		}
		return op, res[i].AlsoStatus == 1
	}, ures, uerrs)
	r.noteReleased(ctx, *s.Also, uerrs)
}

// UndoAcquired ends s, a granted acquisition that is not handed out (it
// took longer than its lease lasts), as a failed one is: everywhere, made
// sure of.
func (r *redlock) UndoAcquired(ctx context.Context, s driver.Lease) {
	r.undo(ctx, s, nil, nil)
}
