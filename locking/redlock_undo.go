package locking

import (
	"context"
	"strings"
	"time"
)

// Undoing what an acquisition set: a failed acquisition everywhere it
// wrote or may have written, with tombstones where it went unanswered,
// and the job lease of a joint claim (ClaimWith) that is not granted.

// undo releases s where it is held (or may be, after an unanswered
// request), on the masked nodes (all when mask is nil). It runs detached
// from ctx's cancellation: a canceled acquisition must still clean up.
//
// A node that did not answer the acquisition (unanswered[i] set) may still
// run it later, after this undo (a frozen node that resumes runs what had
// queued on its connections in no set order): there the undo leaves a
// tombstone of s's value for s's ttl, and the acquire script refuses a
// value with a tombstone, so a late acquisition leaves nothing behind.
func (r *redlock) undo(ctx context.Context, s leaseSpec, mask []bool, unanswered []error) {
	op := r.leaseOp(OpRelease, s)
	if s.claim && s.also != nil {
		op.Also, op.AlsoValue = r.key(s.also.key), s.also.value
	}
	tomb := op
	tomb.Tomb, tomb.TombTTL = r.tombKey(s), msec(s.ttl)
	res := make([]Result, len(r.nodes))
	errs := make([]error, len(r.nodes))
	r.round(context.WithoutCancel(ctx), func(i int) (Op, bool) {
		if unanswered != nil && unanswered[i] != nil {
			return tomb, mask == nil || mask[i]
		}
		return op, mask == nil || mask[i]
	}, res, errs)
}

// tombKey is where an undo leaves s's tombstone: under s's family, named
// by its value's random token.
func (r *redlock) tombKey(s leaseSpec) string {
	tok, _, _ := strings.Cut(s.value, "|")
	return r.key(Key{Family: s.key.Family, Name: tombPrefix + tok})
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
func (r *redlock) joint(ctx context.Context, s leaseSpec, g *grant, res []Result, errs []error) {
	if s.also == nil {
		return
	}
	won, touched := 0, false
	for i, rep := range res {
		if errs[i] == nil && rep.AlsoStatus == 1 {
			won++
		}
		touched = touched || errs[i] != nil || rep.AlsoStatus == 1
	}
	if won >= r.quorum && g.abandoned == nil && !g.leftover {
		g.joined = true
		return
	}
	if !touched {
		return
	}
	// The claim stays; only the lease taken with it is undone, with a
	// tombstone of the claim's value where the acquisition went
	// unanswered (undo), so that a late run of it sets nothing.
	op := r.leaseOp(OpRelease, *s.also)
	tomb := op
	tomb.Tomb, tomb.TombTTL = r.tombKey(s), msec(s.ttl)
	ures := make([]Result, len(r.nodes))
	uerrs := make([]error, len(r.nodes))
	r.round(context.WithoutCancel(ctx), func(i int) (Op, bool) {
		if errs[i] != nil {
			return tomb, true
		}
		return op, res[i].AlsoStatus == 1
	}, ures, uerrs)
}
