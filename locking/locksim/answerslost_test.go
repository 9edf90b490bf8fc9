package locksim_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/locksim"
)

// A one-way partition (SetAnswersLost): the store runs what the replica
// sends, at its time, and the replica hears nothing back; other replicas
// are answered as usual.
func TestAnswersLostRunsTheRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stores := []*locksim.Store{locksim.NewStore("s0"), locksim.NewStore("s1"), locksim.NewStore("s2")}
		net := locksim.NewNet(11, stores...)
		a := net.Nodes("a", locksim.NewGate(0))
		b := net.Nodes("b", locksim.NewGate(0))
		do := func(n driver.Node, v int64) error {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			_, err := n.Do(ctx, driver.MaxSetOp{Key: "t:{job}:fence", N: v})
			return err
		}
		net.SetAnswersLost("a", 2, true)
		require.ErrorIs(t, do(a[2], 5), context.DeadlineExceeded, "a hears no answer")
		require.Equal(t, "5", stores[2].Dump()["t:{job}:fence"], "yet the store ran a's request")
		require.NoError(t, do(a[1], 5), "a's other links answer")
		require.NoError(t, do(b[2], 6), "b is answered by the same store")
		net.SetAnswersLost("a", 2, false)
		require.NoError(t, do(a[2], 7))
		require.Equal(t, "7", stores[2].Dump()["t:{job}:fence"])
	})
}

// A claim whose answer from one store of three is lost is won on the
// other two and applied on all three; its end is too, and a second claim
// of the slot finds it done.
func TestClaimWithAnswersLostOnOneStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		stores := []*locksim.Store{locksim.NewStore("s0"), locksim.NewStore("s1"), locksim.NewStore("s2")}
		net := locksim.NewNet(13, stores...)
		a, b := simLocker(t, net, "a"), simLocker(t, net, "b")
		key := locking.Key{Family: "job", Name: "slot:1"}

		net.SetAnswersLost("a", 2, true)
		la, err := a.Claim(ctx, key, time.Second)
		require.NoError(t, err)
		require.Contains(t, stores[2].Dump()["t:{job}:claims"], "|a", "the claim ran on the store a did not hear from")
		require.NoError(t, la.End(ctx, locking.Ending{DoneTTL: time.Minute, Note: "succeeded"}).Err)
		net.SetAnswersLost("a", 2, false)

		_, err = b.Claim(ctx, key, time.Second)
		var held *locking.HeldError
		require.ErrorAs(t, err, &held, "the slot ran: no second claim")
		require.True(t, held.Done)
		require.Equal(t, "succeeded", held.Note)
	})
}
