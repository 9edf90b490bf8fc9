package lockingtest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
)

// Handled sees the done markers of claims ended as handled, in any family
// and in the order asked, and nothing else: not a claim in progress, a
// released one or a key never claimed.
func testHandled(t *testing.T, l locking.Locker) {
	famA, famB := family(t)+"-a", family(t)+"-b"
	claim := func(fam, name string) *locking.Lease {
		t.Helper()
		lease, err := l.Claim(ctx(t), locking.Key{Family: fam, Name: name}, 5*time.Second)
		require.NoError(t, err)
		return lease
	}
	done, running, released, doneB := claim(famA, "slot:1"), claim(famA, "slot:2"), claim(famA, "slot:3"), claim(famB, "slot:1")
	require.NoError(t, done.End(ctx(t), locking.Ending{DoneTTL: time.Minute, Note: "succeeded"}).Err)
	require.NoError(t, doneB.End(ctx(t), locking.Ending{DoneTTL: time.Minute, Note: "overlap"}).Err)
	require.NoError(t, released.End(ctx(t), locking.Ending{}).Err)
	keys := []locking.Key{
		{Family: famA, Name: "slot:2"}, {Family: famB, Name: "slot:1"}, {Family: famA, Name: "slot:3"},
		{Family: famA, Name: "slot:1"}, {Family: famA, Name: "slot:4"},
	}
	got, err := l.Handled(ctx(t), keys)
	require.NoError(t, err)
	require.Equal(t, []bool{false, true, false, true, false}, got)

	require.NoError(t, running.End(ctx(t), locking.Ending{DoneTTL: time.Minute, Note: "succeeded"}).Err)
	got, err = l.Handled(ctx(t), keys[:1])
	require.NoError(t, err)
	require.Equal(t, []bool{true}, got, "ended since")

	got, err = l.Handled(ctx(t), nil)
	require.NoError(t, err)
	require.Empty(t, got)
	_, err = l.Handled(ctx(t), []locking.Key{{Family: "bad{family}", Name: "x"}})
	require.Error(t, err)
}
