package redlock

import (
	"context"
	"errors"
	"fmt"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
)

// handledTries is how many nodes Handled asks before it gives up: a hint
// that takes longer than two op timeouts comes too late to save anything.
const handledTries = 2

// Handled reads keys' done markers on one node (DoneOp: one MGET), the next in turn that is not known to be down; when it
// does not answer, on the one after it. One node suffices: Handled is a
// hint (store.go), and a marker written on a majority is on every node
// but a minority.
func (r *store) Handled(ctx context.Context, keys []locking.Key) ([]bool, error) {
	op := driver.DoneOp{Keys: make([]string, len(keys))}
	for i, k := range keys {
		op.Keys[i] = r.key(k)
	}
	var errs []error
	for _, i := range r.readOrder(handledTries) {
		rctx, cancel := context.WithTimeout(ctx, r.opTimeout)
		res, err := r.nodes[i].Do(rctx, op)
		cancel()
		if err == nil && len(res.Fields) != len(keys) {
			err = fmt.Errorf("answered %d keys of %d", len(res.Fields), len(keys))
		}
		if err == nil {
			out := make([]bool, len(keys))
			for j, v := range res.Fields {
				out[j] = v != ""
			}
			return out, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		errs = append(errs, &locking.NodeError{Addr: r.nodes[i].Addr(), Err: err})
	}
	return nil, errors.Join(errs...)
}

// readOrder is up to n nodes to read from, in order: round the nodes from
// the next in turn, those not known to be down first.
func (r *store) readOrder(n int) []int {
	start := int(r.nextRead.Add(1))
	var up, down []int
	for k := range r.nodes {
		i := (start + k) % len(r.nodes)
		if r.down[i].Load() {
			down = append(down, i)
		} else {
			up = append(up, i)
		}
	}
	order := append(up, down...)
	return order[:min(n, len(order))]
}
