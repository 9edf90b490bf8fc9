package locksim_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/locksim"
)

// A store restored to an earlier state of its own (a failover to a
// replica that had not received the latest writes) loses what it was told
// since and holds again what it deleted since: here a run's end is lost on
// store 0, so its claim is back there and its done marker gone. The two
// stores that kept the end still refuse the slot to a new claim: one
// store's rollback of a write all three took is absorbed by the quorum.
func TestRestoreLosesTheLatestWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		stores := []*locksim.Store{locksim.NewStore("s0"), locksim.NewStore("s1"), locksim.NewStore("s2")}
		net := locksim.NewNet(7, stores...)
		a, b := simLocker(t, net, "a"), simLocker(t, net, "b")
		key := locking.Key{Family: "job", Name: "slot:1"}

		la, err := a.Claim(ctx, key, time.Second)
		require.NoError(t, err)
		claimed := stores[0].Clone()
		require.NoError(t, la.End(ctx, locking.Ending{DoneTTL: time.Minute, Note: "succeeded"}).Err)
		ended := stores[0].Snapshot()
		for _, s := range stores {
			require.Contains(t, s.Snapshot(), "|succeeded|", "the end's done marker is on every store")
		}

		stores[0].Restore(claimed)
		require.Equal(t, claimed.Snapshot(), stores[0].Snapshot())
		require.NotEqual(t, ended, stores[0].Snapshot())
		require.Contains(t, stores[0].Snapshot(), la.Grant().ID, "the ended claim is back on store 0")
		require.NotContains(t, stores[0].Snapshot(), "|succeeded|", "its done marker is lost there")

		_, err = b.Claim(ctx, key, time.Second)
		var held *locking.HeldError
		require.True(t, errors.As(err, &held) && held.Done, "stores 1 and 2 keep the done marker: %v", err)

		// The state restored from is the caller's: the store's later
		// writes do not reach it.
		before := claimed.Snapshot()
		stores[0].Wipe()
		require.Equal(t, before, claimed.Snapshot())
		require.False(t, strings.Contains(stores[0].Snapshot(), la.Grant().ID))
	})
}
