package redlock

import (
	"errors"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking/internal/wire"
	"github.com/slotlock/slotlock/locking/redistest"
)

// An end that reached one node before its sender lost its lease (a
// settler paused past it, its other requests lost) leaves a done marker
// there and the started, abandoned claim on the others. The next claim
// takes that claim over on a majority: it must be granted as the claim's
// abandonment (to be settled and reported, never run), not refused by the
// marker — refused, the claim stayed open for good, pointed to by every
// later claim, and its run was never reported (the simulation, seed
// 167884).
func TestRedlockSettlementThatReachedOneNode(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 10*time.Second)
	run := newTestRedlock(t, c.Addrs(), "r1")
	key := locking.Key{Family: "job", Name: "slot:20"}
	lease, err := run.Claim(ctx, key, 300*time.Millisecond)
	require.NoError(t, err)
	lease.Start()
	require.NoError(t, lease.Extend(ctx)) // confirmed started on every node
	// r1 dies; a settler's end lands on node 2 alone.
	c.Node(2).Client().Set(ctx, rkey(key), wire.DoneValue("r0", "abandoned", "x"), time.Minute)
	c.Node(2).Client().HDel(ctx, rkey(locking.Key{Family: "job", Name: wire.ClaimsName}), key.Name)
	time.Sleep(400 * time.Millisecond) // the run's lease expires

	settler := newTestRedlock(t, c.Addrs(), "r2")
	got, err := settler.Claim(ctx, key, 5*time.Second)
	require.NoError(t, err, "the abandoned claim on a majority is settled, not refused by a minority's marker")
	ab := got.Grant().Abandoned
	require.NotNil(t, ab, "granted only as the claim's abandonment")
	require.True(t, ab.Started)
	require.Equal(t, "r1", ab.Holder)
	require.NoError(t, got.End(ctx, locking.Ending{DoneTTL: time.Minute, Note: "abandoned"}).Err)
	for i := range 3 {
		require.Zero(t, c.Node(i).Client().HExists(ctx, rkey(locking.Key{Family: "job", Name: wire.ClaimsName}), key.Name).Val(),
			"node %d still holds the claim", i)
		require.NotZero(t, c.Node(i).Client().Exists(ctx, rkey(key)).Val(), "node %d has no done marker", i)
	}

	// A marker on one node with no claim taken over still refuses.
	key2 := locking.Key{Family: "job", Name: "slot:9"}
	c.Node(2).Client().Set(ctx, rkey(key2), "done|r7|failed", time.Minute)
	_, err = settler.Claim(ctx, key2, 5*time.Second)
	var held *locking.HeldError
	require.True(t, errors.As(err, &held) && held.Done, "got %v", err)
}

// A started claim left on a bare minority — the claim reached nodes 0 and
// 1 (node 2 slow), the run confirmed its start there, its end reached node
// 1 alone and its replica died; node 1's marker has since expired — is
// the claim of a run whose body was invoked: one copy is proof. With every
// node answering, the next claim is granted as its abandonment, Started,
// to be settled and reported; it must not be closed as a silent leftover
// (the slot's only record would then be node 1's entry, and a read that
// misses node 1 would let a backfill run the slot again).
func TestRedlockStartedClaimOnAMinorityIsAbandoned(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 10*time.Second)
	run := newTestRedlock(t, c.Addrs(), "r1")
	key := locking.Key{Family: "job", Name: "slot:30"}
	claims := rkey(locking.Key{Family: "job", Name: wire.ClaimsName})
	lease, err := run.Claim(ctx, key, 300*time.Millisecond)
	require.NoError(t, err)
	lease.Start()
	require.NoError(t, lease.Extend(ctx)) // confirmed started
	// Node 2 never had the claim; node 1's end marker expired; node 0
	// keeps the started claim.
	for _, i := range []int{1, 2} {
		c.Node(i).Client().Del(ctx, rkey(key))
		c.Node(i).Client().HDel(ctx, claims, key.Name)
	}
	time.Sleep(400 * time.Millisecond) // the run's lease expires

	settler := newTestRedlock(t, c.Addrs(), "r2")
	got, err := settler.Claim(ctx, key, 5*time.Second)
	require.NoError(t, err)
	require.False(t, got.Grant().Leftover, "a started claim is never a silent leftover")
	ab := got.Grant().Abandoned
	require.NotNil(t, ab, "granted as the started claim's abandonment")
	require.True(t, ab.Started)
	require.Equal(t, "r1", ab.Holder)
	require.NoError(t, got.End(ctx, locking.Ending{DoneTTL: time.Minute, Note: "abandoned"}).Err)
	for i := range 3 {
		require.Zero(t, c.Node(i).Client().HExists(ctx, claims, key.Name).Val(), "node %d still holds the claim", i)
	}
}

// A pause or resume whose command failed stays on the nodes it reached:
// a claim whose majority includes one of them saw it while the others
// did not (a "failed" resume un-paused some slots and not others). A
// claim or a read that meets differing registers writes the newest to the
// nodes that hold an older one.
func TestRedlockRepairsAPauseThatReachedSomeNodes(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 10*time.Second)
	l := newTestRedlock(t, c.Addrs(), "r1")
	paused, err := l.SetPause(ctx, "job", locking.Pause{Paused: true, By: "ops"})
	require.NoError(t, err)
	// A resume that reached node 0 alone (its command exited 1).
	resume := driver.FormatPause(locking.Pause{Version: paused.Version + 1, By: "ops"})
	pauseKey := rkey(locking.Key{Family: "job", Name: wire.PauseName})
	require.NoError(t, c.Node(0).Client().Set(ctx, pauseKey, resume, 0).Err())

	lease, err := l.Claim(ctx, locking.Key{Family: "job", Name: "slot:40"}, time.Second)
	require.NoError(t, err, "a majority holding the resume lets the claim in")
	require.NoError(t, lease.End(ctx, locking.Ending{}).Err)
	require.Eventually(t, func() bool {
		for i := range 3 {
			if c.Node(i).Client().Get(ctx, pauseKey).Val() != resume {
				return false
			}
		}
		return true
	}, 5*time.Second, 20*time.Millisecond, "every node holds the newest register")

	// The same through a read.
	pause := driver.FormatPause(locking.Pause{Version: paused.Version + 2, Paused: true, By: "ops"})
	require.NoError(t, c.Node(2).Client().Set(ctx, pauseKey, pause, 0).Err())
	got, err := l.ReadPause(ctx, "job")
	require.NoError(t, err)
	require.True(t, got.Paused)
	require.Eventually(t, func() bool {
		return c.Node(0).Client().Get(ctx, pauseKey).Val() == pause && c.Node(1).Client().Get(ctx, pauseKey).Val() == pause
	}, 5*time.Second, 20*time.Millisecond, "every node holds the newest register")
}
