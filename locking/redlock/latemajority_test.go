package redlock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redistest"
)

// A majority whose answers come after the op timeout, but within three,
// still counts: on a loaded host every answer is read late, and failing
// such a round turned answers that had come into failures, retried and
// loading the host more (nine replicas on 2 cores collapsed). Nodes 1 and
// 2 hold every command for 1.8 op timeouts (CLIENT PAUSE ALL); node 0 is
// the one a round's caller sends to itself (the first idle node), whose
// socket deadline follows the node's recent answers, so that a frozen node
// costs its caller one op timeout, not three: with it frozen the round
// still ends within two. The claim, its start and its end each succeed
// late; held past three op timeouts, the claim fails as before.
func TestLateMajorityStillCounts(t *testing.T) {
	c := redistest.Start(t, 3)
	l := newTestRedlock(t, c.Addrs(), "me")
	ctx := tctx(t, 20*time.Second)
	hold := func(d time.Duration, nodes ...int) {
		t.Helper()
		for _, i := range nodes {
			require.NoError(t, c.Node(i).Client().Do(ctx, "CLIENT", "PAUSE", d.Milliseconds(), "ALL").Err())
		}
	}
	late := 180 * time.Millisecond // 1.8 × testOpTimeout

	// Warm: scripts loaded, connections open.
	lease, err := l.Claim(ctx, locking.Key{Family: "warm", Name: "s"}, 5*time.Second)
	require.NoError(t, err)
	require.NoError(t, lease.End(ctx, locking.Ending{}).Err)

	hold(late, 1, 2)
	start := time.Now()
	lease, err = l.Claim(ctx, locking.Key{Family: "late", Name: "s"}, 5*time.Second)
	require.NoError(t, err, "a majority answered within 3 op timeouts")
	require.GreaterOrEqual(t, time.Since(start), late-20*time.Millisecond, "the nodes were not held")
	time.Sleep(late)
	hold(late, 1, 2)
	lease.Start()
	require.NoError(t, lease.Extend(ctx))
	time.Sleep(late)
	hold(late, 1, 2)
	require.NoError(t, lease.End(ctx, locking.Ending{DoneTTL: time.Minute, Note: "ok"}).Err)
	time.Sleep(late)

	hold(4*testOpTimeout, 1, 2)
	_, err = l.Claim(ctx, locking.Key{Family: "later", Name: "s"}, 5*time.Second)
	require.ErrorIs(t, err, locking.ErrNoQuorum, "held past 3 op timeouts")
	time.Sleep(4 * testOpTimeout) // the pause ends; the undo reaches the nodes

	hold(2*time.Second, 0)
	start = time.Now()
	lease, err = l.Claim(ctx, locking.Key{Family: "frozen", Name: "s"}, 5*time.Second)
	took := time.Since(start)
	require.NoError(t, err)
	require.Less(t, took, 2*testOpTimeout, "a frozen node held its caller past its op timeout")
	require.NoError(t, c.Node(0).Client().Do(ctx, "CLIENT", "UNPAUSE").Err())
	require.NoError(t, lease.End(ctx, locking.Ending{}).Err)
}
