package redlock

import (
	"context"
	"time"

	"github.com/slotlock/slotlock/locking/driver"
)

// ReadClocks reads every node's clock (TIME), each read timed on the
// locker's Clock (driver.ClockReader). The reads go to each node
// directly, on its reader connection (redisread.go), not through a round:
// they wait behind no claim in the lock pipeline, which would widen
// their uncertainty, and what they find says nothing of the node's
// health (a lock round's answers tell that). One node after the other,
// each within the op timeout: a dead node costs one op timeout, in a
// check that runs every half minute on a goroutine of its own; read in
// parallel, the reads were goroutines of one process that block at one
// instant, which the simulation's ordered network lets go on in the order
// the Go scheduler stopped them — 14 of 25 seeds replayed differently.
func (r *nodeSet) ReadClocks(ctx context.Context) []driver.NodeClock {
	return eachNode(ctx, r, r.readClock)
}

// eachNode reads every node with read, one after the other, each within
// the op timeout (ReadClocks says why not in parallel).
func eachNode[T any](ctx context.Context, r *nodeSet, read func(context.Context, driver.Node) T) []T {
	out := make([]T, len(r.nodes))
	for i, n := range r.nodes {
		rctx, cancel := context.WithTimeout(ctx, r.opTimeout)
		out[i] = read(rctx, n)
		cancel()
	}
	return out
}

// readClock reads node n's clock once.
func (r *nodeSet) readClock(ctx context.Context, n driver.Node) driver.NodeClock {
	c := driver.NodeClock{Addr: n.Addr()}
	sent := r.clock.Now()
	res, err := n.Do(ctx, driver.TimeOp{})
	received := r.clock.Now()
	if err != nil {
		c.Err = err
		return c
	}
	c.Read = true
	c.Offset, c.Uncertainty = driver.OffsetAt(sent, received, time.UnixMicro(res.N))
	return c
}
