package locksim_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/locksim"
	"github.com/slotlock/slotlock/locking/redlock"
)

// Found by the simulation (seed 543067): a claim written on stores 0 and 1
// whose holder could then renew only on store 0 (partitioned from 1). A
// new Claim found it "held" on 0, taken over on 1 and absent on 2 — and,
// counting only the store it took over, took it for a leftover and ran the
// slot a second time. The claim is on a majority: it must be reported as
// abandoned, never run again.
func TestClaimLiveOnOneStoreAndTakenOverOnAnother(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		net, a, b := pairOnThreeStores(t, 7)
		key := locking.Key{Family: "job", Name: "slot:1"}

		net.SetDown(2, true) // a's claim reaches stores 0 and 1 only
		la, err := a.Claim(ctx, key, time.Second)
		require.NoError(t, err)
		// a renews on store 0 only (store 2 still down: a renewal that
		// reached it would spread the claim there and hold a majority).
		net.SetCut("a", 1, true)
		kctx := la.Keep(ctx)
		time.Sleep(1500 * time.Millisecond)
		require.Error(t, kctx.Err(), "a cannot renew on a majority: its lease is lost")
		net.SetDown(2, false)

		lb, err := b.Claim(ctx, key, time.Second)
		require.NoError(t, err)
		require.NotNil(t, lb.Grant().Abandoned, "the claim is on a majority (live on 0, taken over on 1): abandoned, not a leftover")
		require.Equal(t, la.Grant().ID, lb.Grant().Abandoned.ID)
		require.NoError(t, lb.End(ctx, locking.Ending{DoneTTL: time.Minute, Note: "abandoned"}).Err)
		_ = la.End(ctx, locking.Ending{}).Err // a is still cut from store 1: no majority to answer it
	})
}

// The same claim with store 2 back before its renewals: the renewal
// spreads it to store 2, so a, cut from store 1, still renews on a
// majority (0 and 2) and keeps its lease, and b is refused: the claim is
// held, not abandoned.
func TestClaimOnTwoStoresSpreadsToTheThird(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		net, a, b := pairOnThreeStores(t, 7)
		key := locking.Key{Family: "job", Name: "slot:1"}

		net.SetDown(2, true)
		la, err := a.Claim(ctx, key, time.Second)
		require.NoError(t, err)
		net.SetDown(2, false)
		net.SetCut("a", 1, true)
		kctx := la.Keep(ctx)
		time.Sleep(1500 * time.Millisecond)
		require.NoError(t, kctx.Err(), "a renews on stores 0 and 2")

		_, err = b.Claim(ctx, key, time.Second)
		var held *locking.HeldError
		require.ErrorAs(t, err, &held, "the claim is held on a majority")
		net.SetCut("a", 1, false)
		require.NoError(t, la.End(ctx, locking.Ending{DoneTTL: time.Minute, Note: "succeeded"}).Err)
	})
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// pairOnThreeStores is a net of three stores (s0, s1, s2) under seed and
// the Lockers of replicas a and b over it.
func pairOnThreeStores(t *testing.T, seed uint64) (*locksim.Net, locking.Locker, locking.Locker) {
	t.Helper()
	net := locksim.NewNet(seed, locksim.NewStore("s0"), locksim.NewStore("s1"), locksim.NewStore("s2"))
	return net, simLocker(t, net, "a"), simLocker(t, net, "b")
}

// simLocker is replica name's Locker over net's stores (100 ms per store
// and round), closed with the test.
func simLocker(t *testing.T, net *locksim.Net, name string) locking.Locker {
	t.Helper()
	l, err := redlock.OnNodes(net.Nodes(name, locksim.NewGate(0)), "t", 100*time.Millisecond,
		locking.Options{Replica: name, Logger: discard()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// A claim found on one store of three while all answer is a leftover: the
// new lease covers it (Grant.Leftover) but is not a claim on a majority,
// so its caller must not run under it (the simulation, seed 142305, ran a
// slot twice when it did); a done marker clears the leftover.
func TestClaimOverALeftover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		stores := []*locksim.Store{locksim.NewStore("s0"), locksim.NewStore("s1"), locksim.NewStore("s2")}
		net := locksim.NewNet(9, stores...)
		l := simLocker(t, net, "a")
		key := locking.Key{Family: "job", Name: "slot:1"}

		// A request executed late on store 0 alone: a claim, soon expired.
		_, err := stores[0].Apply(driver.AcquireOp{Key: "t:{job}:slot:1", Fence: "t:{job}:fence",
			Claims: "t:{job}:claims", Lives: "t:{job}:lives", Field: "slot:1", Value: "0123456789abcdef|x", TTL: 10})
		require.NoError(t, err)
		time.Sleep(50 * time.Millisecond)

		lease, err := l.Claim(ctx, key, time.Second)
		require.NoError(t, err)
		require.True(t, lease.Grant().Leftover)
		require.Nil(t, lease.Grant().Abandoned)
		require.NoError(t, lease.End(ctx, locking.Ending{DoneTTL: time.Minute, Note: "abandoned"}).Err)
		for _, s := range stores {
			require.NotContains(t, s.Dump()["t:{job}:claims"], "|x", "the leftover is cleared")
		}
	})
}
