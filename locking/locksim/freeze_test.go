package locksim_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/locksim"
)

// A frozen store runs nothing: its senders time out, and what they sent
// runs when it thaws, after the fact; the seed draws the replay order.
func TestFrozenStoreReplaysItsQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := locksim.NewStore("s0")
		net := locksim.NewNet(3, store)
		node := net.Nodes("a", locksim.NewGate(0))[0]
		net.SetFrozen(0, true)
		require.True(t, net.Frozen(0))
		for _, v := range []string{"1", "2", "3", "4", "5", "6"} {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			_, err := node.Do(ctx, driver.LogAddOp{Key: "log", Entry: v, N: int64(len(v))})
			cancel()
			require.ErrorIs(t, err, context.DeadlineExceeded, "a frozen store answers nothing")
		}
		time.Sleep(time.Second) // the requests' goroutines have queued them
		require.Zero(t, store.Len(), "a frozen store runs nothing")

		net.SetFrozen(0, false)
		require.False(t, net.Frozen(0))
		res, err := node.Do(context.Background(), driver.LogOp{Key: "log", Limit: 10})
		require.NoError(t, err)
		require.Len(t, res.Log, 6, "the queue ran when the store thawed")
	})
}

// The replay order is the seed's: two nets with the same seed replay the
// same queue alike, and some seed replays it out of arrival order.
func TestFrozenStoreReplayOrder(t *testing.T) {
	order := func(seed uint64) string {
		var got string
		synctest.Test(t, func(t *testing.T) {
			store := locksim.NewStore("s0")
			net := locksim.NewNet(seed, store)
			node := net.Nodes("a", locksim.NewGate(0))[0]
			net.SetFrozen(0, true)
			for _, v := range []string{"a", "b", "c", "d", "e"} {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
				// SET NX: the first request the store runs wins the key.
				_, _ = node.Do(ctx, driver.AcquireOp{Key: "k", Fence: "f", Value: v, TTL: 60_000})
				cancel()
				time.Sleep(10 * time.Millisecond) // queued in this order
			}
			net.SetFrozen(0, false)
			got = store.Dump()["k"]
			time.Sleep(time.Second) // the answers travel back, to nobody
		})
		return got
	}
	require.Equal(t, order(11), order(11))
	firsts := map[string]bool{}
	for seed := range uint64(20) {
		firsts[order(seed+1)] = true
	}
	require.Greater(t, len(firsts), 1, "the replay order depends on the seed, not on arrival")
}
