package lockingtest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
)

// ReadLease sees a live lease and names its holder; a key never taken,
// released, or whose lease expired reads free; a done marker reads as
// one, not as a holder; a claim taken with With shows its joined lease.
func testReadLease(t *testing.T, l locking.Locker) {
	fam := family(t)
	run := locking.Key{Family: fam, Name: "run"}
	free := func(key locking.Key, why string) {
		t.Helper()
		he, err := l.ReadLease(ctx(t), key)
		require.NoError(t, err)
		require.Nil(t, he, why)
	}
	free(run, "never taken")

	lease := mustAcquire(t, l, run, 5*time.Second)
	he, err := l.ReadLease(ctx(t), run)
	require.NoError(t, err)
	require.NotNil(t, he, "held")
	require.Equal(t, lease.Grant().Holder, he.Holder)
	require.False(t, he.Done)
	require.ErrorIs(t, he, locking.ErrNotAcquired)
	require.NoError(t, lease.End(ctx(t), locking.Ending{}).Err)
	free(run, "released")

	short := mustAcquire(t, l, run, 300*time.Millisecond)
	_ = short // never renewed: it expires
	time.Sleep(400 * time.Millisecond)
	free(run, "expired")

	slot := locking.Key{Family: fam, Name: "slot:1"}
	claim, err := l.Claim(ctx(t), slot, 5*time.Second, locking.With(run))
	require.NoError(t, err)
	require.NotNil(t, claim.Grant().Joined)
	he, err = l.ReadLease(ctx(t), run)
	require.NoError(t, err)
	require.NotNil(t, he, "joined lease held")
	require.Equal(t, claim.Grant().Holder, he.Holder)
	require.NoError(t, claim.End(ctx(t), locking.Ending{DoneTTL: time.Minute, Note: "succeeded",
		Also: claim.Grant().Joined}).Err)
	free(run, "ended with its claim")
	he, err = l.ReadLease(ctx(t), slot)
	require.NoError(t, err)
	require.NotNil(t, he, "done marker")
	require.True(t, he.Done)
	require.Equal(t, "succeeded", he.Note)

	_, err = l.ReadLease(ctx(t), locking.Key{Family: "bad{family}", Name: "x"})
	require.Error(t, err)
}
