package redlock

import (
	"context"
	"sync"
	"time"

	"github.com/slotlock/slotlock/locking/driver"
)

// ReadClocks reads every node's clock (TIME) at once, each read timed on
// the locker's Clock (driver.ClockReader). The reads go to each node
// directly, on its reader connection (redisread.go), not through a round:
// they wait behind no claim in the lock pipeline, which would widen
// their uncertainty, and what they find says nothing of the node's
// health (a lock round's answers tell that).
func (r *nodeSet) ReadClocks(ctx context.Context) []driver.NodeClock {
	ctx, cancel := context.WithTimeout(ctx, r.opTimeout)
	defer cancel()
	out := make([]driver.NodeClock, len(r.nodes))
	var wg sync.WaitGroup
	for i, n := range r.nodes {
		wg.Go(func() { out[i] = r.readClock(ctx, n) })
	}
	wg.Wait()
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
