package redlock

import (
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking/redistest"
)

// The read model's reads (ReadLog) have their own connection and wait for
// each other, never for or in front of lock calls: with every node's
// reader taken (a page storm), lock calls still go through at once, a read
// gives up at its deadline, and no node is taken for unreachable.
func TestReadsDoNotQueueWithLockCalls(t *testing.T) {
	c := redistest.Start(t, 3)
	l := newTestRedlock(t, c.Addrs(), "r1")
	r := driverOf(l)
	k := locking.Key{Family: "job", Name: "slot:1"}
	for _, n := range r.nodes {
		n.(*redisNode).reading <- struct{}{} // a read in flight on every node
	}
	start := time.Now()
	lease, err := l.Acquire(tctx(t, 2*time.Second), k, 10*time.Second)
	require.NoError(t, err, "a lock call does not wait for the reads")
	require.NoError(t, lease.End(tctx(t, 2*time.Second), locking.Ending{}).Err)
	require.Less(t, time.Since(start), testOpTimeout*4)

	_, err = l.ReadLog(tctx(t, 2*time.Second), "job", 0, 10)
	require.Error(t, err, "the reads wait their turn, up to the round's deadline")
	for i := range r.nodes {
		require.False(t, r.down[i].Load(), "node %d taken for down by a read that waited", i)
	}
	for _, n := range r.nodes {
		<-n.(*redisNode).reading
	}
	_, err = l.ReadLog(tctx(t, 2*time.Second), "job", 0, 10)
	require.NoError(t, err)
}
