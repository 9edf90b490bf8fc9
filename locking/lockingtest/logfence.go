package lockingtest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
)

// A fenced AppendLog (LogAppend.Token) is refused, changing nothing, once
// the family's fence register has seen a newer token: a holder that froze
// past its lease cannot append after its successor did. IfAbsent adds an
// entry only where none of its score is there, so that of two writers of
// one verdict exactly one is told it added it.
func testAppendLogFenced(t *testing.T, l locking.Locker) {
	fam := family(t)
	const fence = "judged-by"
	add := func(a locking.LogAppend) error {
		t.Helper()
		return l.AppendLog(ctx(t), fam, a)
	}
	read := func() []locking.LogEntry {
		t.Helper()
		got, err := l.ReadLog(ctx(t), fam, 0, 100)
		require.NoError(t, err)
		return got
	}
	entry := func(score int64, v string) locking.LogEntry { return locking.LogEntry{Score: score, Value: v} }

	require.NoError(t, add(locking.LogAppend{Entry: entry(10, "a"), Fence: fence, Token: 5}))
	require.NoError(t, add(locking.LogAppend{Entry: entry(20, "b"), Fence: fence, Token: 7}), "a newer token")
	require.NoError(t, add(locking.LogAppend{Entry: entry(25, "b2"), Fence: fence, Token: 7}), "the same token again")
	err := add(locking.LogAppend{Entry: entry(30, "stale"), Fence: fence, Token: 5})
	require.ErrorIs(t, err, locking.ErrStaleToken, "an older token after a newer one")
	require.Equal(t, []locking.LogEntry{entry(25, "b2"), entry(20, "b"), entry(10, "a")}, read(),
		"the stale append changed nothing")
	require.ErrorIs(t, add(locking.LogAppend{Entry: entry(30, "stale"), Fence: fence, Token: 6, IfAbsent: true}),
		locking.ErrStaleToken, "stale and absent: stale")
	got, err := l.ReadRecord(ctx(t), locking.Key{Family: fam, Name: fence})
	require.NoError(t, err)
	require.EqualValues(t, 7, got, "the register holds the newest token")

	require.ErrorIs(t, add(locking.LogAppend{Entry: entry(10, "other"), IfAbsent: true}), locking.ErrLogHasEntry,
		"another entry of the score is there")
	require.ErrorIs(t, add(locking.LogAppend{Entry: entry(10, "a"), IfAbsent: true}), locking.ErrLogHasEntry,
		"the identical entry is there")
	require.NoError(t, add(locking.LogAppend{Entry: entry(40, "c"), IfAbsent: true}))
	require.ErrorIs(t, add(locking.LogAppend{Entry: entry(40, "c"), IfAbsent: true}), locking.ErrLogHasEntry,
		"the second of two identical appends is told it did not add it")
	require.Equal(t, []locking.LogEntry{entry(40, "c"), entry(25, "b2"), entry(20, "b"), entry(10, "a")}, read())

	// A newer token meeting an entry already there still raises the
	// register: the older holder is fenced out from then on.
	require.ErrorIs(t, add(locking.LogAppend{Entry: entry(40, "d"), Fence: fence, Token: 9, IfAbsent: true}),
		locking.ErrLogHasEntry)
	require.ErrorIs(t, add(locking.LogAppend{Entry: entry(50, "e"), Fence: fence, Token: 8}), locking.ErrStaleToken)

	err = add(locking.LogAppend{Entry: entry(60, "f"), Token: 10})
	require.Error(t, err, "a token without a fence register")
	require.NotErrorIs(t, err, locking.ErrStaleToken)
	require.Error(t, add(locking.LogAppend{Entry: entry(60, "f"), Fence: "log", Token: 10}), "a reserved name as the fence")
}
