package locking

import "context"

func (r *redlock) pauseKey(family string) string {
	return r.key(Key{Family: family, Name: pauseName})
}

// readPause reads the family's register on every node; it needs a
// majority and returns the newest value: a write that reached a majority
// is seen.
func (r *redlock) readPause(ctx context.Context, family string) (Pause, error) {
	res := make([]Result, len(r.nodes))
	errs := make([]error, len(r.nodes))
	r.round(ctx, all(PauseOp{Key: r.pauseKey(family)}), res, errs)
	if err := ctx.Err(); err != nil {
		return Pause{}, err
	}
	var vals []string
	for i, rep := range res {
		if errs[i] == nil {
			vals = append(vals, rep.Value)
		}
	}
	if len(vals) < r.quorum {
		return Pause{}, &QuorumError{Op: "pause", Need: r.quorum, Got: len(vals), Err: r.nodeErrs(errs)}
	}
	return newestPause(vals), nil
}

// setPause writes p, with a version above the newest one read, to a
// majority.
func (r *redlock) setPause(ctx context.Context, family string, p Pause) (Pause, error) {
	cur, err := r.readPause(ctx, family)
	if err != nil {
		return Pause{}, err
	}
	p.Version = max(cur.Version+1, r.clock.Now().UnixMilli())
	op := PauseOp{Key: r.pauseKey(family), Value: formatPause(p), N: p.Version}
	res := make([]Result, len(r.nodes))
	errs := make([]error, len(r.nodes))
	r.round(ctx, all(op), res, errs)
	if err := ctx.Err(); err != nil {
		return Pause{}, err
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
		return Pause{}, &QuorumError{Op: "pause", Need: r.quorum, Got: held, Err: r.nodeErrs(errs)}
	}
	return newestPause(vals), nil
}
