package lockingtest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
)

// Lease.End with an Entry adds it to the family's log where it sets the done
// marker, once even when retried; the log keeps its newest entries only,
// and ReadLog returns them newest first from a score on.
func testLog(t *testing.T, l locking.Backend) {
	fam := family(t)
	got, err := l.ReadLog(ctx(t), fam, 0, 10)
	require.NoError(t, err)
	require.Empty(t, got)
	for i := 1; i <= 5; i++ {
		lease, err := l.Claim(ctx(t), locking.Key{Family: fam, Name: fmt.Sprintf("slot:%d", i)}, 5*time.Second)
		require.NoError(t, err)
		e := locking.LogEntry{Score: int64(100 + i), Value: fmt.Sprintf("entry %d", i)}
		require.NoError(t, lease.End(ctx(t), locking.Ending{DoneTTL: time.Minute, Note: "succeeded", Entry: &e, Keep: 3}).Err)
		require.NoError(t, lease.End(ctx(t), locking.Ending{DoneTTL: time.Minute, Note: "succeeded", Entry: &e, Keep: 3}).Err, "a retry does nothing")
	}
	got, err = l.ReadLog(ctx(t), fam, 0, 10)
	require.NoError(t, err)
	require.Equal(t, []locking.LogEntry{{Score: 105, Value: "entry 5"}, {Score: 104, Value: "entry 4"}, {Score: 103, Value: "entry 3"}}, got,
		"the newest 3, newest first")
	got, err = l.ReadLog(ctx(t), fam, 104, 10)
	require.NoError(t, err)
	require.Len(t, got, 2)
	got, err = l.ReadLog(ctx(t), fam, 0, 1)
	require.NoError(t, err)
	require.Equal(t, []locking.LogEntry{{Score: 105, Value: "entry 5"}}, got)

	// A claim released (its work never began) writes nothing; a plain
	// lease has no log.
	lease, err := l.Claim(ctx(t), locking.Key{Family: fam, Name: "slot:9"}, 5*time.Second)
	require.NoError(t, err)
	require.NoError(t, lease.End(ctx(t), locking.Ending{}).Err)
	got, err = l.ReadLog(ctx(t), fam, 0, 10)
	require.NoError(t, err)
	require.Len(t, got, 3)
}
