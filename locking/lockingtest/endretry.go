package lockingtest

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
)

// A retried End long after its first attempt: the first attempt's answers
// are lost, and its done marker expires before the retry (a settler
// paused past the done TTL, or a long outage). Whether the first attempt
// found the lease its own is then told by the log entry it added, which
// only an end that found the lease its own adds.

// deadClaim has r1 claim key on every store, confirm the start, and die:
// its claim stays, its lease expires.
func deadClaim(t *testing.T, w World, key locking.Key, ttl time.Duration) *locking.Lease {
	r1 := newReplica(t, w, "r1")
	dead, err := r1.Claim(ctx(t), key, ttl)
	require.NoError(t, err)
	dead.Start()
	require.NoError(t, dead.Extend(ctx(t)), "the renewal that confirms the start")
	time.Sleep(ttl + 200*time.Millisecond)
	return dead
}

// The simulation, seed 167884. B takes the dead run's claim over on
// stores 0 and 1 (its request to store 2 is lost: the claim stays there)
// and settles it: its end lands on stores 0 and 1 but their answers are
// lost, and store 2 answers "not ours". B retries after its done markers
// expired: stores 0 and 1 hold nothing of the slot but B's log entry. The
// retry must succeed — B is the one settler, and reports the run
// abandoned — where before it was told ErrLockLost and nobody ever
// reported the run.
func testEndRetriedAfterItsMarkerExpired(t *testing.T, w World) {
	key := locking.Key{Family: family(t), Name: "slot:1"}
	const ttl, doneTTL = 600 * time.Millisecond, 300 * time.Millisecond
	dead := deadClaim(t, w, key, ttl)
	b, c := newReplica(t, w, "b"), newReplica(t, w, "c")

	b.nodes[2].then(driver.OpAcquire, lost)
	settler, err := b.Claim(ctx(t), key, 10*time.Second)
	require.NoError(t, err)
	require.NotNil(t, settler.Grant().Abandoned, "taken over on stores 0 and 1: a majority")
	require.Equal(t, dead.Grant().ID, settler.Grant().Abandoned.ID)

	entry := locking.LogEntry{Score: 1, Value: "abandoned, settled by b"}
	end := locking.Ending{DoneTTL: doneTTL, Note: "abandoned", Entry: &entry, Keep: 10}
	b.nodes[0].then(driver.OpRelease, mute)
	b.nodes[1].then(driver.OpRelease, mute)
	first := settler.End(ctx(t), end).Err
	var qe *locking.QuorumError
	require.True(t, errors.As(first, &qe), "answers lost on stores 0 and 1: unknown, got %v", first)
	time.Sleep(doneTTL + 200*time.Millisecond) // its markers expire

	require.NoError(t, settler.End(ctx(t), end).Err, "the first attempt found the lease ours on stores 0 and 1")
	got, err := c.ReadLog(ctx(t), key.Family, 0, 10)
	require.NoError(t, err)
	require.Equal(t, []locking.LogEntry{entry}, got, "the abandoned run is in the history, once")

	next, err := c.Claim(ctx(t), key, time.Second)
	require.NoError(t, err, "the markers expired: the slot's key is free again")
	// The claim left on store 2 shows its start: evidence, never closed
	// silently. It is granted as the run's abandonment again; that B
	// already settled it is the history's to say (B's entry names the
	// run), so that a scheduler closes it without a second report.
	again := next.Grant().Abandoned
	require.NotNil(t, again, "the started claim left on store 2 is the run's abandonment")
	require.True(t, again.Started)
	require.Equal(t, dead.Grant().ID, again.ID)
	require.False(t, next.Grant().Leftover)
	require.NoError(t, next.End(ctx(t), locking.Ending{}).Err)
}

// The other side of the same rule. A's end reaches store 0 only (its
// requests to stores 1 and 2 are lost) and its lease expires; C takes the
// claim over on stores 1 and 2 and settles it with its own entry. A's
// retry after every marker expired finds its entry on store 0 alone: it
// is told ErrLockLost, so that only C reports the run.
func testEndRetriedAfterAnotherSettled(t *testing.T, w World) {
	key := locking.Key{Family: family(t), Name: "slot:1"}
	const ttl, doneTTL = 600 * time.Millisecond, 300 * time.Millisecond
	deadClaim(t, w, key, ttl)
	a, c := newReplica(t, w, "a"), newReplica(t, w, "c")

	settlerA, err := a.Claim(ctx(t), key, ttl)
	require.NoError(t, err)
	require.NotNil(t, settlerA.Grant().Abandoned)
	entryA := locking.LogEntry{Score: 1, Value: "abandoned, settled by a"}
	endA := locking.Ending{DoneTTL: doneTTL, Note: "abandoned", Entry: &entryA, Keep: 10}
	a.nodes[1].then(driver.OpRelease, lost)
	a.nodes[2].then(driver.OpRelease, lost)
	var qe *locking.QuorumError
	require.True(t, errors.As(settlerA.End(ctx(t), endA).Err, &qe), "one answer of three")
	time.Sleep(ttl + 200*time.Millisecond) // A's lease expires on stores 1 and 2

	settlerC, err := c.Claim(ctx(t), key, 10*time.Second)
	require.NoError(t, err)
	require.NotNil(t, settlerC.Grant().Abandoned, "taken over on stores 1 and 2: a majority")
	entryC := locking.LogEntry{Score: 1, Value: "abandoned, settled by c"}
	require.NoError(t, settlerC.End(ctx(t), locking.Ending{DoneTTL: doneTTL, Note: "abandoned", Entry: &entryC, Keep: 10}).Err)
	time.Sleep(doneTTL + 200*time.Millisecond)

	require.ErrorIs(t, settlerA.End(ctx(t), endA).Err, locking.ErrLockLost, "A's end landed on store 0 alone")
}
