package locksim_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
)

// The split view of redlock's TestReleasedLeftoverTakenOver on simulated
// stores: a job lease released by a replica cut from store 0 stays there;
// a replica cut from store 2 takes that leftover over (its holder's
// release left the value's tombstone on stores 1 and 2) and holds a
// majority. A lease still held, on stores 0 and 2, is never taken by a
// replica cut from store 2.
func TestReleasedLeftoverTakenOverInASplitView(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		net, a, b := pairOnThreeStores(t, 17)
		key := locking.Key{Family: "job", Name: "run"}

		la, err := a.Acquire(ctx, key, 5*time.Second)
		require.NoError(t, err)
		net.SetCut("a", 0, true)
		require.NoError(t, la.End(ctx, locking.Ending{}).Err, "released on stores 1 and 2")
		net.SetCut("b", 2, true)
		lb, err := b.Acquire(ctx, key, 5*time.Second)
		require.NoError(t, err, "b takes the released leftover on store 0 over")
		require.NoError(t, lb.End(ctx, locking.Ending{}).Err)

		// A held lease: a reaches stores 1 and 2 (cut from 0), b stores 0
		// and 1 (cut from 2).
		held := locking.Key{Family: "job", Name: "held"}
		net.SetCut("a", 0, false)
		net.SetCut("a", 1, true) // a's lease lands on stores 0 and 2
		lh, err := a.Acquire(ctx, held, 5*time.Second)
		require.NoError(t, err)
		_, err = b.Acquire(ctx, held, 5*time.Second)
		require.ErrorIs(t, err, locking.ErrSplitVote, "refused by a's live lease on store 0")
		require.NoError(t, lh.Extend(ctx), "a's lease is intact")
	})
}
