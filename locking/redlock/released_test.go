package redlock

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/redistest"
)

// closedAddr is a loopback address nothing listens on: a node this
// replica cannot reach while its peers can (a partition between hosts).
func closedAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// A job lease whose holder released it while cut from node 0 stays there;
// a contender cut from node 2 finds it on one of the two nodes it reaches.
// The release left its tombstone on nodes 1 and 2, so the contender takes
// the leftover over and wins nodes 0 and 1. A lease that nobody gave up
// (live on nodes 0 and 2, a majority the contender sees one node of) is
// never taken: the contender is refused and the lease stays.
func TestReleasedLeftoverTakenOver(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 20*time.Second)
	a := c.Addrs()
	key := locking.Key{Family: "split", Name: "run"}
	holder := newTestRedlock(t, a, "h")
	lease, err := holder.Acquire(ctx, key, 5*time.Second)
	require.NoError(t, err)
	held := driver.Lease{Key: key, Value: storedValue(t, c, key, lease), TTL: 5 * time.Second}

	// The holder, cut from node 0, releases: nodes 1 and 2 only.
	cutHolder := driverOf(newTestRedlock(t, []string{closedAddr(t), a[1], a[2]}, "h"))
	require.NoError(t, cutHolder.Release(ctx, held, driver.End{}).Err)
	require.Equal(t, held.Value, c.Node(0).Client().Get(ctx, rkey(key)).Val(), "the leftover on node 0")

	contender := newTestRedlock(t, []string{a[0], a[1], closedAddr(t)}, "c")
	won, err := contender.Acquire(ctx, key, 5*time.Second)
	require.NoError(t, err, "the released leftover is taken over")
	require.NotEqual(t, held.Value, c.Node(0).Client().Get(ctx, rkey(key)).Val())
	require.NoError(t, won.End(ctx, locking.Ending{}).Err)

	// A live lease on nodes 0 and 2: no tombstone, nothing taken.
	live := key
	live.Name = "live"
	v := testToken() + "|h"
	for _, i := range []int{0, 2} {
		require.NoError(t, c.Node(i).Client().Set(ctx, rkey(live), v, 5*time.Second).Err())
	}
	_, err = contender.Acquire(ctx, live, 5*time.Second)
	var split *locking.SplitVoteError
	require.True(t, errors.As(err, &split), "refused by the live lease: %v", err)
	require.Equal(t, v, c.Node(0).Client().Get(ctx, rkey(live)).Val(), "the live lease stays")
	require.Empty(t, c.Node(1).Client().Get(ctx, rkey(live)).Val(), "the refused acquisition was undone")
}

// The job lease ended with its claim (Ending.Also) leaves the same
// tombstone where the end missed a node: a joint claim of the next slot
// by a contender cut from another node takes the leftover over.
func TestReleasedJobLeaseOfAClaimTakenOver(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 20*time.Second)
	a := c.Addrs()
	s := jointSpec("splitjoint")
	r := driverOf(newTestRedlock(t, a, "a"))
	_, err := r.Acquire(ctx, s)
	require.NoError(t, err)

	cut := driverOf(newTestRedlock(t, []string{closedAddr(t), a[1], a[2]}, "a"))
	out := cut.Release(ctx, driver.Lease{Key: s.Key, Value: s.Value, TTL: s.TTL, Claim: true}, driver.End{Also: s.Also, Done: "done|a|succeeded|x", DoneTTL: 10 * time.Second})
	require.NoError(t, out.Err)
	require.NoError(t, out.Also)
	require.Equal(t, s.Also.Value, c.Node(0).Client().Get(ctx, rkey(s.Also.Key)).Val(), "the job lease left on node 0")

	contender := newTestRedlock(t, []string{a[0], a[1], closedAddr(t)}, "b")
	lease, err := contender.Acquire(ctx, s.Also.Key, 5*time.Second)
	require.NoError(t, err, "the released job lease is taken over")
	require.NoError(t, lease.End(ctx, locking.Ending{}).Err)
}
