package lockingtest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
)

// A race splits a slot's stores between two claimants: R1 wins stores 0
// and 1, C wins store 2 only and undoes its share. R1's claim is then on
// a bare majority, one store's fault away from a minority. Its renewal
// that confirms the start spreads it to store 2, which holds nothing for
// the slot any more (in its plain form: a later renewal would confirm it
// there): once R1 dies and store 0 cannot be reached, a settler meets
// the claim on stores 1 and 2 — a majority, started on store 1 — and
// reports it abandoned and started. Without the spread it met the claim on store 1
// alone and could not tell the run that began from a failed claim's
// leftover.
func testClaimSpreadsAtRenewal(t *testing.T, w World) {
	key := locking.Key{Family: family(t), Name: "slot:1"}
	const ttl = 600 * time.Millisecond
	r1, c, b := newReplica(t, w, "r1"), newReplica(t, w, "c"), newReplica(t, w, "b")

	// The race, as its stores ran it: store 2 took C's claim first.
	c.nodes[0].then(driver.OpAcquire, lost)
	c.nodes[1].then(driver.OpAcquire, lost)
	_, err := c.Claim(ctx(t), key, ttl)
	require.Error(t, err, "C won store 2 only")
	r1.nodes[2].then(driver.OpAcquire, lost)
	dead, err := r1.Claim(ctx(t), key, ttl)
	require.NoError(t, err, "R1 won stores 0 and 1")
	dead.Start()
	require.NoError(t, dead.Extend(ctx(t)), "the renewal that confirms the start")
	time.Sleep(ttl + 200*time.Millisecond) // R1 died: its lease expires, its claim stays

	b.nodes[0].then(driver.OpAcquire, lost)
	lease, err := b.Claim(ctx(t), key, 10*time.Second)
	require.NoError(t, err)
	ab := lease.Grant().Abandoned
	require.NotNil(t, ab, "the started claim is on stores 1 and 2: B must learn it was abandoned")
	require.Equal(t, dead.Grant().ID, ab.ID)
	require.True(t, ab.Started, "the run confirmed its start on store 1")
	require.NoError(t, lease.End(ctx(t), locking.Ending{DoneTTL: time.Minute, Note: "abandoned"}).Err)
}

// A plain lease won on stores 0 and 1 spreads to store 2 at its renewal:
// with store 0 out of reach a rival is refused on a majority (held), not
// let in on store 2.
func testLeaseSpreadsAtRenewal(t *testing.T, w World) {
	key := locking.Key{Family: family(t), Name: "run"}
	a, b := newReplica(t, w, "a"), newReplica(t, w, "b")
	a.nodes[2].then(driver.OpAcquire, lost)
	lease, err := a.Acquire(ctx(t), key, 10*time.Second)
	require.NoError(t, err)
	require.Equal(t, "", storeValue(t, a, 2, key), "store 2 missed the acquisition")
	require.NoError(t, lease.Extend(ctx(t)))
	require.True(t, strings.HasSuffix(storeValue(t, a, 2, key), "|a"), "the renewal spread A's lease to store 2")

	b.nodes[0].then(driver.OpAcquire, lost)
	_, err = b.Acquire(ctx(t), key, time.Second)
	wantHeld(t, err, false)
	require.NoError(t, lease.End(ctx(t), locking.Ending{}).Err)
	require.Equal(t, "", storeValue(t, a, 2, key), "released on store 2 too")
}

// A renewal never spreads over what another holds: A's lease, won on
// stores 0 and 1, renews while store 2 still holds B's (B's acquisition
// got no answer elsewhere, and its undo has not reached store 2 yet).
func testSpreadLeavesAnothersLease(t *testing.T, w World) {
	key := locking.Key{Family: family(t), Name: "run"}
	a, b := newReplica(t, w, "a"), newReplica(t, w, "b")
	b.nodes[0].then(driver.OpAcquire, lost)
	b.nodes[1].then(driver.OpAcquire, lost)
	b.nodes[2].then(driver.OpRelease, lost)
	_, err := b.Acquire(ctx(t), key, 10*time.Second)
	require.Error(t, err, "B won store 2 only")
	if !strings.HasSuffix(storeValue(t, a, 2, key), "|b") {
		t.Skip("B's undo reached store 2 (sent again): nothing of B's left to keep")
	}
	a.nodes[2].then(driver.OpAcquire, lost)
	lease, err := a.Acquire(ctx(t), key, 10*time.Second)
	require.NoError(t, err)
	before := storeValue(t, a, 2, key)
	require.NoError(t, lease.Extend(ctx(t)), "stores 0 and 1")
	require.Equal(t, before, storeValue(t, a, 2, key), "store 2 is left as it was")
	require.NoError(t, lease.End(ctx(t), locking.Ending{}).Err)
}

// storeValue is what store i holds at key (a lease's or a done marker's
// value), read past r's wrapping; "" when nothing.
func storeValue(t *testing.T, r *replica, i int, key locking.Key) string {
	t.Helper()
	res, err := r.nodes[i].Node.Do(ctx(t), driver.GetOp{Key: storeKey(key), Lease: true})
	require.NoError(t, err)
	return res.Value // "" with Nil
}

// storeKey is key's name on the stores under the checks' lockers (prefix
// "lockingtest", redlock's layout).
func storeKey(key locking.Key) string { return "lockingtest:{" + key.Family + "}:" + key.Name }

// A renewal spreads only while fresh by the store's clock: one that
// queued on a frozen store and runs there after its lease may have ended
// everywhere must not set it again. Sent to one store directly: stale,
// nothing; fresh, spread (Status 2); then renewed (Status 1).
func testStaleRenewalDoesNotSpread(t *testing.T, w World) {
	key := locking.Key{Family: family(t), Name: "run"}
	a := newReplica(t, w, "a")
	op := driver.ExtendOp{Key: storeKey(key), Value: "00ff|a", TTL: 10000,
		SentMS: time.Now().Add(-3 * time.Second).UnixMilli(), FreshMS: 2000}
	res, err := a.nodes[0].Node.Do(ctx(t), op)
	require.NoError(t, err)
	require.Equal(t, int64(0), res.Status, "sent 3 s ago, fresh for 2 s")
	require.Equal(t, "", storeValue(t, a, 0, key))
	op.SentMS = time.Now().UnixMilli()
	res, err = a.nodes[0].Node.Do(ctx(t), op)
	require.NoError(t, err)
	require.Equal(t, int64(2), res.Status, "fresh: spread")
	res, err = a.nodes[0].Node.Do(ctx(t), op)
	require.NoError(t, err)
	require.Equal(t, int64(1), res.Status, "held: renewed")
	require.Equal(t, "00ff|a", storeValue(t, a, 0, key))
}
