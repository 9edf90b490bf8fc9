package lockingtest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
)

// AppendLog adds entries outside a claim's end: an identical entry is kept
// once, Replace swaps an entry for its successor in one step, and the log
// keeps what Floor and Keep say.
func testAppendLog(t *testing.T, l locking.Locker) {
	fam := family(t)
	add := func(a locking.LogAppend) {
		t.Helper()
		require.NoError(t, l.AppendLog(ctx(t), fam, a))
	}
	read := func() []locking.LogEntry {
		t.Helper()
		got, err := l.ReadLog(ctx(t), fam, 0, 100)
		require.NoError(t, err)
		return got
	}
	add(locking.LogAppend{Entry: locking.LogEntry{Score: 10, Value: "a"}})
	add(locking.LogAppend{Entry: locking.LogEntry{Score: 10, Value: "a"}})
	require.Equal(t, []locking.LogEntry{{Score: 10, Value: "a"}}, read(), "an identical entry is kept once")

	add(locking.LogAppend{Entry: locking.LogEntry{Score: 20, Value: "beat-1"}})
	add(locking.LogAppend{Entry: locking.LogEntry{Score: 30, Value: "beat-2"}, Replace: "beat-1"})
	require.Equal(t, []locking.LogEntry{{Score: 30, Value: "beat-2"}, {Score: 10, Value: "a"}}, read(), "replaced")
	add(locking.LogAppend{Entry: locking.LogEntry{Score: 40, Value: "beat-2"}, Replace: "beat-2"})
	require.Equal(t, []locking.LogEntry{{Score: 40, Value: "beat-2"}, {Score: 10, Value: "a"}}, read(),
		"an entry replacing itself moves to its new score")

	add(locking.LogAppend{Entry: locking.LogEntry{Score: 50, Value: "b"}, Floor: 15})
	require.Equal(t, []locking.LogEntry{{Score: 50, Value: "b"}, {Score: 40, Value: "beat-2"}}, read(), "below the floor: gone")
	add(locking.LogAppend{Entry: locking.LogEntry{Score: 45, Value: "c"}, Keep: 2})
	require.Equal(t, []locking.LogEntry{{Score: 50, Value: "b"}, {Score: 45, Value: "c"}}, read(), "the newest 2")

	// Entries added by a lease's End and by AppendLog share the log.
	lease, err := l.Claim(ctx(t), locking.Key{Family: fam, Name: "slot:60"}, 5*time.Second)
	require.NoError(t, err)
	require.NoError(t, lease.End(ctx(t), locking.Ending{DoneTTL: time.Minute, Note: "succeeded", Entry: &locking.LogEntry{Score: 60, Value: "run"}, Keep: 10}).Err)
	require.Len(t, read(), 3)

	require.Error(t, l.AppendLog(ctx(t), "bad{family}", locking.LogAppend{Entry: locking.LogEntry{Value: "x"}}))
}

// ReadClaims lists the claims not yet ended: a claim in progress and one
// whose holder vanished, but not a released or a done one.
func testReadClaims(t *testing.T, l locking.Locker) {
	fam := family(t)
	keys, err := l.ReadClaims(ctx(t), fam)
	require.NoError(t, err)
	require.Empty(t, keys)
	claim := func(name string) *locking.Lease {
		t.Helper()
		lease, err := l.Claim(ctx(t), locking.Key{Family: fam, Name: name}, 5*time.Second)
		require.NoError(t, err)
		return lease
	}
	running, done, released := claim("slot:3"), claim("slot:1"), claim("slot:2")
	require.NoError(t, done.End(ctx(t), locking.Ending{DoneTTL: time.Minute, Note: "succeeded"}).Err)
	require.NoError(t, released.End(ctx(t), locking.Ending{}).Err)
	keys, err = l.ReadClaims(ctx(t), fam)
	require.NoError(t, err)
	require.Equal(t, []locking.Key{{Family: fam, Name: "slot:3"}}, keys)
	require.NoError(t, running.End(ctx(t), locking.Ending{DoneTTL: time.Minute, Note: "succeeded"}).Err)
	keys, err = l.ReadClaims(ctx(t), fam)
	require.NoError(t, err)
	require.Empty(t, keys)
}
