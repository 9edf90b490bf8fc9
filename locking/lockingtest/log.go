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
func testLog(t *testing.T, l locking.Locker) {
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

// A run whose lease expired while it went on (its replica froze) is
// settled by another lease, which takes its claim over and ends it with
// its own entry; the run's own end, coming after, is told ErrLockLost but
// still leaves its outcome in the log beside the settler's (the history
// shows the run's own end over "abandoned"). A settler's end, by
// contrast, adds its entry only where its lease is its own: a settler
// frozen past its lease, whose claim a second settler took over and
// settled, adds nothing when it wakes, so that the history holds one
// settler's entry (and a retry counting its own entry cannot be fooled).
func testLogOwnEndAfterASettle(t *testing.T, l locking.Locker) {
	key := locking.Key{Family: family(t), Name: "slot:1"}
	const ttl = 400 * time.Millisecond
	run, err := l.Claim(ctx(t), key, ttl)
	require.NoError(t, err)
	run.Start()
	require.NoError(t, run.Extend(ctx(t)), "the renewal that confirms the start")
	time.Sleep(ttl + 200*time.Millisecond) // frozen past its lease

	late, err := l.Claim(ctx(t), key, ttl)
	require.NoError(t, err)
	require.NotNil(t, late.Grant().Abandoned)
	time.Sleep(ttl + 200*time.Millisecond) // the first settler freezes too
	settler, err := l.Claim(ctx(t), key, 10*time.Second)
	require.NoError(t, err)
	require.NotNil(t, settler.Grant().Abandoned, "the claim is still the run's")
	abandoned := locking.LogEntry{Score: 1, Value: "abandoned, settled by " + settler.Grant().ID}
	require.NoError(t, settler.End(ctx(t), locking.Ending{DoneTTL: time.Minute, Note: "abandoned", Entry: &abandoned, Keep: 10}).Err)

	lateEntry := locking.LogEntry{Score: 1, Value: "abandoned, settled by " + late.Grant().ID}
	require.ErrorIs(t, late.End(ctx(t), locking.Ending{DoneTTL: time.Minute, Note: "abandoned", Entry: &lateEntry, Keep: 10}).Err, locking.ErrLockLost)
	succeeded := locking.LogEntry{Score: 1, Value: "succeeded " + run.Grant().ID}
	require.ErrorIs(t, run.End(ctx(t), locking.Ending{DoneTTL: time.Minute, Note: "succeeded", Entry: &succeeded, Keep: 10}).Err, locking.ErrLockLost)
	got, err := l.ReadLog(ctx(t), key.Family, 0, 10)
	require.NoError(t, err)
	require.ElementsMatch(t, []locking.LogEntry{abandoned, succeeded}, got, "the run's own outcome beside its one settler's")
}
