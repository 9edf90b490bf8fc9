package redlock

import (
	"context"
	"strconv"
	"strings"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/internal/wire"
)

func (r *store) pauseKey(family string) string {
	return r.key(locking.Key{Family: family, Name: wire.PauseName})
}

// ReadPause reads the family's register on every node; it needs a
// majority and returns the newest value: a write that reached a majority
// is seen.
func (r *store) ReadPause(ctx context.Context, family string) (locking.Pause, error) {
	res := make([]driver.Result, len(r.nodes))
	errs := make([]error, len(r.nodes))
	r.round(ctx, all(driver.PauseOp{Key: r.pauseKey(family)}), res, errs)
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
	r.repairPause(family, func(i int) (string, bool) { return res[i].Value, errs[i] == nil })
	return driver.NewestPause(vals), nil
}

// repairPause writes the newest register value any node answered with
// (value(i): node i's, and whether it answered) to the nodes that
// answered an older one, in the background. A pause or resume whose
// command failed (it reached fewer than a majority) stays on the nodes
// it reached, and a claim whose majority includes one of them sees it
// while the others do not — a "failed" resume would un-pause some slots
// and not others. Completed everywhere as soon as any reader sees it, the
// register is the same on every node: the failed command may still take
// effect (it says so), never on some slots only. A node that misses the
// repair is repaired by the next reader; versions only rise.
func (r *store) repairPause(family string, value func(i int) (string, bool)) {
	newest, version := "", int64(0)
	for i := range r.nodes {
		if v, ok := value(i); ok {
			if n := pauseVersion(v); n > version {
				newest, version = v, n
			}
		}
	}
	if version == 0 {
		return
	}
	stale := make([]bool, len(r.nodes))
	anyStale := false
	for i := range r.nodes {
		v, ok := value(i)
		stale[i] = ok && pauseVersion(v) < version
		anyStale = anyStale || stale[i]
	}
	if !anyStale {
		return
	}
	op := driver.PauseOp{Key: r.pauseKey(family), Value: newest, N: version}
	r.bg.Add(1)
	go func() {
		defer r.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 2*r.opTimeout)
		defer cancel()
		res := make([]driver.Result, len(r.nodes))
		errs := make([]error, len(r.nodes))
		r.round(ctx, func(i int) (driver.Op, bool) { return op, stale[i] }, res, errs)
	}()
}

// pauseVersion is the version a register value starts with (0: none).
func pauseVersion(v string) int64 {
	if v == "" {
		return 0 // no register: the usual case, spared ParseInt's error
	}
	head, _, _ := strings.Cut(v, "|")
	n, _ := strconv.ParseInt(head, 10, 64)
	return n
}

// SetPause writes p, with a version above the newest one read and the
// past pauses it holds (Pause.Succeed), to a majority.
func (r *store) SetPause(ctx context.Context, family string, p locking.Pause) (locking.Pause, error) {
	cur, err := r.ReadPause(ctx, family)
	if err != nil {
		return locking.Pause{}, err
	}
	p.Version = max(cur.Version+1, r.clock.Now().UnixMilli())
	p = cur.Succeed(p)
	op := driver.PauseOp{Key: r.pauseKey(family), Value: driver.FormatPause(p), N: p.Version}
	res := make([]driver.Result, len(r.nodes))
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
	return driver.NewestPause(vals), nil
}
