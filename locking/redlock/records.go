package redlock

import (
	"context"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
)

func (r *store) AdvanceRecord(ctx context.Context, key locking.Key, v int64) error {
	if err := driver.CheckRecord(key, v); err != nil {
		return err
	}
	return r.maxSet(ctx, key, v)
}

// maxSet raises the record key to at least v on a majority of all nodes.
func (r *store) maxSet(ctx context.Context, key locking.Key, v int64) error {
	res := make([]driver.Result, len(r.nodes))
	errs := make([]error, len(r.nodes))
	r.round(ctx, all(driver.MaxSetOp{Key: r.key(key), N: v}), res, errs)
	if err := ctx.Err(); err != nil {
		return err
	}
	if got := r.answered(errs); got < r.quorum {
		return &locking.QuorumError{Op: "record", Key: key, Need: r.quorum, Got: got, Err: r.nodeErrs(errs)}
	}
	return nil
}

func (r *store) ReadRecord(ctx context.Context, key locking.Key) (int64, error) {
	if err := driver.CheckKey(key); err != nil {
		return 0, err
	}
	res := make([]driver.Result, len(r.nodes))
	errs := make([]error, len(r.nodes))
	r.round(ctx, all(driver.GetOp{Key: r.key(key)}), res, errs)
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	answered, best, differ := 0, int64(0), false
	for i, rep := range res {
		if errs[i] != nil {
			continue
		}
		v := rep.N // 0 when absent
		if answered > 0 && v != best {
			differ = true
		}
		if answered == 0 || v > best {
			best = v
		}
		answered++
	}
	if answered < r.quorum {
		return 0, &locking.QuorumError{Op: "record", Key: key, Need: r.quorum, Got: answered, Err: r.nodeErrs(errs)}
	}
	if differ {
		// Read repair: a value seen on only part of the majority is made
		// durable on a majority before it is returned, so a later read
		// through any majority cannot return less.
		if err := r.maxSet(ctx, key, best); err != nil {
			return 0, err
		}
	}
	return max(best, 0), nil
}

func (r *store) Ping(ctx context.Context) ([]locking.NodeStatus, error) {
	res := make([]driver.Result, len(r.nodes))
	errs := make([]error, len(r.nodes))
	r.round(ctx, all(driver.PingOp{}), res, errs)
	st := make([]locking.NodeStatus, len(r.nodes))
	for i, n := range r.nodes {
		st[i] = locking.NodeStatus{Addr: n.Addr(), Up: errs[i] == nil, Err: errs[i]}
	}
	if err := ctx.Err(); err != nil {
		return st, err
	}
	if up := r.answered(errs); up < r.quorum {
		return st, &locking.QuorumError{Op: "ping", Need: r.quorum, Got: up, Err: r.nodeErrs(errs)}
	}
	return st, nil
}
