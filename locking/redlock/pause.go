package redlock

import (
	"context"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/internal/wire"
)

func (r *redlock) pauseKey(family string) string {
	return r.key(locking.Key{Family: family, Name: wire.PauseName})
}

// ReadPause reads the family's register on every node; it needs a
// majority and returns the newest value: a write that reached a majority
// is seen.
func (r *redlock) ReadPause(ctx context.Context, family string) (locking.Pause, error) {
	res := make([]locking.Result, len(r.nodes))
	errs := make([]error, len(r.nodes))
	r.round(ctx, all(locking.PauseOp{Key: r.pauseKey(family)}), res, errs)
	if err := ctx.Err(); err != nil {
		return locking.Pause{}, err
	}
	var vals []string
	for i, rep := range res {
		if errs[i] == nil {
			vals = append(vals, rep.Value)
		}
	}
	if len(vals) < r.quorum {
		return locking.Pause{}, &locking.QuorumError{Op: "pause", Need: r.quorum, Got: len(vals), Err: r.nodeErrs(errs)}
	}
	return locking.NewestPause(vals), nil
}

// SetPause writes p, with a version above the newest one read, to a
// majority.
func (r *redlock) SetPause(ctx context.Context, family string, p locking.Pause) (locking.Pause, error) {
	cur, err := r.ReadPause(ctx, family)
	if err != nil {
		return locking.Pause{}, err
	}
	p.Version = max(cur.Version+1, r.clock.Now().UnixMilli())
	op := locking.PauseOp{Key: r.pauseKey(family), Value: locking.FormatPause(p), N: p.Version}
	res := make([]locking.Result, len(r.nodes))
	errs := make([]error, len(r.nodes))
	r.round(ctx, all(op), res, errs)
	if err := ctx.Err(); err != nil {
		return locking.Pause{}, err
	}
	held := 0 // nodes that hold this write or a newer one
	var vals []string
	for i, rep := range res {
		if errs[i] == nil {
			held++
			vals = append(vals, rep.Value)
		}
	}
	if held < r.quorum {
		return locking.Pause{}, &locking.QuorumError{Op: "pause", Need: r.quorum, Got: held, Err: r.nodeErrs(errs)}
	}
	return locking.NewestPause(vals), nil
}
