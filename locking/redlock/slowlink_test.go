package redlock

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redistest"
)

// A replica whose links to two nodes of three turn slower than its op
// timeout has no majority: its claims fail, and it retries them while the
// slot is fresh, as the scheduler does. A claim written on a connection
// made before runs on the slow nodes after its sender gave up on it; the
// connection is closed under it (its pipeline timed out), and a new one
// is set up with a handshake (HELLO) that must be answered before
// anything is written on it. The undo must still reach those nodes while
// the link is slow: a claim left on a majority is taken, once its lease
// expires, for a run that may have started — the slot reported missed,
// "may have started", by the peer that settles it (seen in the soak,
// link_slow_majority_one, 7 such slots in 2 minutes).
func TestSlowMajorityLeavesNoClaim(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 60*time.Second)
	addrs := c.Addrs()
	slow := append([]string(nil), addrs...)
	var links []*redistest.Proxy
	for _, i := range []int{0, 2} {
		l, err := redistest.NewProxy(addrs[i])
		require.NoError(t, err)
		t.Cleanup(func() { _ = l.Close() })
		slow[i] = l.Addr()
		links = append(links, l)
	}
	r1 := newTestRedlock(t, slow, "r1")
	r2 := newTestRedlock(t, addrs, "r2")
	const ttl = 3 * time.Second
	for slot := range 3 {
		// Connections set up while the links are fast.
		warm := locking.Key{Family: "slowlink", Name: fmt.Sprintf("warm:%d", slot)}
		l, err := r1.Claim(ctx, warm, ttl)
		require.NoError(t, err)
		require.NoError(t, l.End(ctx, locking.Ending{}).Err)
		for _, l := range links {
			l.SetLatency(2 * testOpTimeout)
		}
		key := locking.Key{Family: "slowlink", Name: fmt.Sprintf("slot:%d", slot)}
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
			_, err := r1.Claim(ctx, key, ttl)
			require.Error(t, err, "a claim won without a majority")
			time.Sleep(20*time.Millisecond + time.Duration(slot)*7*time.Millisecond)
		}
		// Past the lease of r1's last claim, the link still slow.
		time.Sleep(ttl + 4*2*testOpTimeout)
		l, err = r2.Claim(ctx, key, ttl)
		require.NoError(t, err)
		require.Nil(t, l.Grant().Abandoned, "slot %d: a claim of r1 was left on a majority of the nodes", slot)
		require.NoError(t, l.End(ctx, locking.Ending{}).Err)
		for _, l := range links {
			l.SetLatency(0)
		}
		time.Sleep(time.Second) // r1's undos answered
	}
}

// A claim refused on a majority by a claim held there under its own lease,
// confirmed started on none of them, while another node does not hold it
// (it granted ours, or holds another value), says so
// (HeldError.Unconfirmed): the refusal of a failed acquisition whose undo
// reached one node only, for its peers to ask again. Held on every node
// (a winner's), or confirmed started, it does not.
func TestClaimHeldUnconfirmed(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 20*time.Second)
	r1 := newTestRedlock(t, c.Addrs(), "r1")
	r2 := newTestRedlock(t, c.Addrs(), "r2")
	const ttl = 10 * time.Second
	refusal := func(key locking.Key) *locking.HeldError {
		t.Helper()
		_, err := r2.Claim(ctx, key, ttl)
		var he *locking.HeldError
		require.ErrorAs(t, err, &he)
		return he
	}
	key := locking.Key{Family: "unconfirmed", Name: "slot:1"}
	l, err := r1.Claim(ctx, key, ttl)
	require.NoError(t, err)
	require.False(t, refusal(key).Unconfirmed, "a claim held on every node")

	// Undone on node 1 only, as a failed acquisition's undo that reached
	// one node.
	claims, lives := "t:{unconfirmed}:claims", "t:{unconfirmed}:lives"
	n1 := c.Node(1).Client()
	v := n1.HGet(ctx, claims, key.Name).Val()
	require.NotEmpty(t, v)
	require.NoError(t, n1.HDel(ctx, claims, key.Name).Err())
	require.NoError(t, n1.HDel(ctx, lives, key.Name).Err())
	he := refusal(key)
	require.True(t, he.Unconfirmed, "a claim on a bare majority, not started: %v", he)
	require.Equal(t, "r1", he.Holder)

	// Node 1 held by another claim of r1's (its retry, in its round).
	retry := "0123456789abcdef0123456789abcdef|r1"
	until := time.Now().Add(ttl).UnixMilli()
	require.NoError(t, n1.HSet(ctx, claims, key.Name, retry).Err())
	require.NoError(t, n1.HSet(ctx, lives, key.Name, fmt.Sprintf("%s|%d", retry, until)).Err())
	he = refusal(key)
	require.True(t, he.Unconfirmed, "a claim on a bare majority, a retry's on the third node: %v", he)

	// Confirmed started on one of them: a run that began.
	require.NoError(t, c.Node(2).Client().HSet(ctx, claims, key.Name, "started:"+v).Err())
	require.False(t, refusal(key).Unconfirmed, "a claim confirmed started")
	_ = l
}
