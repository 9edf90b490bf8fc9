package redlock

import (
	"context"
	"strings"

	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/internal/wire"
)

// Released leftovers: a plain lease (a job lease) whose release did not
// reach every node stays on those it missed until its TTL runs out. With
// every node reachable from a contender that costs nothing — the
// contender wins on the others — but a contender that cannot reach some
// other node (a partition between hosts: its holder cut from node 0, the
// contender from node 2) finds the leftover on one node of the two it
// reaches, and no majority: a forbid job's slots missed for up to a TTL
// although every replica reaches a majority (the e2e scenario
// split_views).
//
// So a release that misses a node says so on the nodes it reached: it
// leaves its value's tombstone there (the one an undo leaves, which only
// an acquisition of that very value heeds) for the lease's TTL, the
// longest the leftover can live. A contender that finds a value on a
// minority, where taking those nodes would make its majority, reads that
// value's tombstone on the nodes that answered; where one holds it, the
// value's holder gave it up, so the contender deletes the leftover where
// it holds that value (compare-and-delete) and sends its acquisition
// there again.
//
// Safety: a tombstone of a value is written only by its holder giving it
// up — its release, or the undo of its failed acquisition — after which
// the holder never renews or acts under it; a live lease's value has
// none. Nodes that never see a tombstone change nothing: replicas that
// write none leave leftovers to expire, as before, and replicas that read
// none ignore them.

// noteReleased leaves x's tombstone, for x's TTL, on the nodes that
// answered x's release (errs[i] nil) when some node did not: there x may
// still be held.
func (r *redlock) noteReleased(ctx context.Context, x driver.Lease, errs []error) {
	missed, answered := false, false
	for _, err := range errs {
		missed = missed || err != nil
		answered = answered || err == nil
	}
	if !missed || !answered {
		return
	}
	op := r.releaseOp(x)
	op.Tomb, op.TombTTL = r.tombKey(x), msec(x.TTL)
	res := make([]driver.Result, len(r.nodes))
	nerrs := make([]error, len(r.nodes))
	r.round(context.WithoutCancel(ctx), func(i int) (driver.Op, bool) { return op, errs[i] == nil }, res, nerrs)
}

// takeReleased, after an acquisition op of s, a plain lease, that did
// not win a majority, deletes a leftover that refused it where the
// leftover's holder gave it up (its tombstone is on a node that
// answered), and sends op again to those nodes, updating res and errs.
// It reports whether it did.
func (r *redlock) takeReleased(ctx context.Context, s driver.Lease, op driver.AcquireOp, res []driver.Result, errs []error) bool {
	won, byValue := 0, map[string]int{}
	for i, rep := range res {
		switch {
		case errs[i] != nil:
		case rep.Status == 1:
			won++
		case rep.Value != "" && !strings.HasPrefix(rep.Value, wire.DonePrefix):
			byValue[rep.Value]++
		}
	}
	left, leftN := "", 0
	for v, n := range byValue {
		if n > leftN || (n == leftN && v < left) {
			left, leftN = v, n
		}
	}
	// A value on a majority is a live lease; one whose nodes would not
	// make a majority with ours is not worth a round.
	if leftN == 0 || leftN >= r.quorum || won+leftN < r.quorum || ctx.Err() != nil {
		return false
	}
	gone := driver.Lease{Key: s.Key, Value: left, TTL: s.TTL}
	got := make([]driver.Result, len(r.nodes))
	gerrs := make([]error, len(r.nodes))
	read := driver.GetOp{Key: r.tombKey(gone), Lease: true}
	r.round(ctx, func(i int) (driver.Op, bool) { return read, errs[i] == nil }, got, gerrs)
	given := false
	for i := range got {
		given = given || (errs[i] == nil && gerrs[i] == nil && !got[i].Nil)
	}
	if !given {
		return false
	}
	holds := func(i int) bool { return errs[i] == nil && res[i].Status == 0 && res[i].Value == left }
	del := r.releaseOp(gone)
	derrs := make([]error, len(r.nodes))
	r.round(ctx, func(i int) (driver.Op, bool) { return del, holds(i) }, got, derrs)
	again := make([]bool, len(r.nodes))
	for i := range again {
		again[i] = holds(i) && derrs[i] == nil
	}
	ares := make([]driver.Result, len(r.nodes))
	aerrs := make([]error, len(r.nodes))
	r.round(ctx, func(i int) (driver.Op, bool) { return op, again[i] }, ares, aerrs)
	for i, ok := range again {
		if ok {
			res[i], errs[i] = ares[i], aerrs[i]
		}
	}
	return true
}
