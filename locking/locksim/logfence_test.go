package locksim_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
)

// Two writers of one verdict over three stores, one of them partly ahead:
// of two appends with IfAbsent exactly one is told it added the entry on a
// majority, whichever stores each reached first; and once a newer token
// appended on a majority, an older token cannot append on a majority.
func TestAppendLogOnceOverAMajority(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		net, a, b := pairOnThreeStores(t, 7)
		verdict := func(token uint64) locking.LogAppend {
			return locking.LogAppend{Entry: locking.LogEntry{Score: 100, Value: "missed"}, Fence: "judge", Token: token, IfAbsent: true}
		}

		// a (token 5) reaches store 0 alone: no majority, not added.
		net.SetCut("a", 1, true)
		net.SetCut("a", 2, true)
		require.ErrorIs(t, a.AppendLog(ctx, "job", verdict(5)), locking.ErrNoQuorum)
		// b (token 6) adds it on stores 1 and 2: a majority, b reports it.
		require.NoError(t, b.AppendLog(ctx, "job", verdict(6)))
		net.SetCut("a", 1, false)
		net.SetCut("a", 2, false)
		// a wakes and tries again: fenced on 1 and 2, present on 0.
		require.ErrorIs(t, a.AppendLog(ctx, "job", verdict(5)), locking.ErrStaleToken)
		// b again (a retry after a lost answer): present everywhere.
		require.ErrorIs(t, b.AppendLog(ctx, "job", verdict(6)), locking.ErrLogHasEntry)

		log, err := b.ReadLog(ctx, "job", 0, 10)
		require.NoError(t, err)
		require.Equal(t, []locking.LogEntry{{Score: 100, Value: "missed"}}, log)
	})
}
