package redlock

import (
	"context"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
)

// ReadLease reads key's value on every node (GetOp with Lease: one GET)
// and answers from the union of a majority: the holder of a live lease
// found on any of them, else a done marker found on any, else nil. A
// lease on a minority counts: its taker may still be about to learn it
// won (or it is a leftover), and a reader that looks for a run going on
// must not miss one.
func (r *store) ReadLease(ctx context.Context, key locking.Key) (*locking.HeldError, error) {
	if err := driver.CheckKey(key); err != nil {
		return nil, err
	}
	res := make([]driver.Result, len(r.nodes))
	errs := make([]error, len(r.nodes))
	r.round(ctx, all(driver.GetOp{Key: r.key(key), Lease: true}), res, errs)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if got := r.answered(errs); got < r.quorum {
		return nil, &locking.QuorumError{Op: "read", Key: key, Need: r.quorum, Got: got, Err: r.nodeErrs(errs)}
	}
	var done *locking.HeldError
	for i, rep := range res {
		if errs[i] != nil || rep.Nil || rep.Value == "" {
			continue
		}
		he := driver.ParseHeld(key, rep.Value)
		if !he.Done {
			return he, nil
		}
		done = he
	}
	return done, nil
}
