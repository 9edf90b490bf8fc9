package redlock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redistest"
)

// A plain lease (a job lease) whose acquisition a frozen majority runs
// when it resumes is not left there for its TTL. The acquisition was
// written on the connections the nodes had; its undo, queued behind it,
// was not (the timed-out pipeline closed its connection, and a new one
// cannot be set up with a frozen node). The undo is sent again until the
// nodes answer it, as a claim's is: the lease is gone soon after the
// resume, not a TTL later. Seen in the soak (redis_pause_two): a forbid
// job's slots skipped overlap for a run that did not exist, a TTL after
// a majority resumed.
func TestFailedLeaseIsNotLeftOnAResumedMajority(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 30*time.Second)
	l := newTestRedlock(t, c.Addrs(), "a")
	key := locking.Key{Family: "frozenundo", Name: "run"}
	const ttl = 20 * time.Second
	lease, err := l.Acquire(ctx, key, ttl) // one connection per node
	require.NoError(t, err)
	require.NoError(t, lease.End(ctx, locking.Ending{}).Err)
	for _, i := range []int{1, 2} {
		require.NoError(t, c.Node(i).Pause())
	}
	_, err = l.Acquire(ctx, key, ttl)
	require.ErrorIs(t, err, locking.ErrNoQuorum)
	time.Sleep(time.Second)
	for _, i := range []int{1, 2} {
		require.NoError(t, c.Node(i).Resume())
	}
	name := driverOf(l).key(key)
	require.Eventually(t, func() bool {
		for i := range 3 {
			if v := c.Node(i).Client().Get(ctx, name).Val(); v != "" {
				return false
			}
		}
		return true
	}, 3*time.Second, 20*time.Millisecond, "the failed acquisition is still held on the resumed nodes")
	// And a contender gets the key.
	b := newTestRedlock(t, c.Addrs(), "b")
	lease, err = b.Acquire(ctx, key, ttl)
	require.NoError(t, err)
	require.NoError(t, lease.End(ctx, locking.Ending{}).Err)
}
