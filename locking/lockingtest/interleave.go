package lockingtest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/redlock"
)

// Interleavings: checks that need each store's requests ordered, lost or
// answered one by one, so they run on the stores of a Redlock (real Redis
// nodes, simulated ones) through redlock.OnNodes, each replica over its
// own wrapped nodes. A single in-process store (NewLocal) has no such
// interleavings.

// World gives each replica of one check its own Nodes over the same
// stores, in the same order (a fresh family per check keeps checks apart).
type World func(replica string) []driver.Node

// RunNodes runs every interleaving check as a subtest of t; newWorld is
// called once per check.
func RunNodes(t *testing.T, newWorld func(t *testing.T) World) {
	for _, c := range nodeCases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, newWorld(t)) })
	}
}

// RunNodesSynctest is RunNodes with each check in its own testing/synctest
// bubble (locking/locksim's stores); newWorld is called inside it.
func RunNodesSynctest(t *testing.T, newWorld func(t *testing.T) World) {
	for _, c := range nodeCases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { c.fn(t, newWorld(t)) })
		})
	}
}

var nodeCases = []struct {
	name string
	fn   func(t *testing.T, w World)
}{
	{"ConcurrentSettlersOfAStartedClaim", testConcurrentSettlers},
	{"UndoOfATimedOutClaimIsMadeSure", testUndoMadeSure},
	{"EndRetriedAfterItsMarkerExpired", testEndRetriedAfterItsMarkerExpired},
	{"EndRetriedAfterAnotherSettled", testEndRetriedAfterAnotherSettled},
	{"ClaimSpreadsAtRenewal", testClaimSpreadsAtRenewal},
	{"LeaseSpreadsAtRenewal", testLeaseSpreadsAtRenewal},
	{"SpreadLeavesAnothersLease", testSpreadLeavesAnothersLease},
	{"StaleRenewalDoesNotSpread", testStaleRenewalDoesNotSpread},
}

// fate is what a wrapped node does with one request.
type fate int

const (
	pass     fate = iota // executed, answered
	lost                 // not executed, no answer
	mute                 // executed, its answer lost
	sequence             // executed when the check gives it its turn
)

// wnode wraps a Node: requests of kind kind get the fate the check set.
type wnode struct {
	driver.Node
	mu    sync.Mutex
	fates map[driver.OpKind][]fate // consumed one per request; then pass
	turn  chan struct{}            // sequence: the check's go-ahead
	done  chan struct{}            // sequence: executed
}

func (n *wnode) next(k driver.OpKind) fate {
	n.mu.Lock()
	defer n.mu.Unlock()
	fs := n.fates[k]
	if len(fs) == 0 {
		return pass
	}
	n.fates[k] = fs[1:]
	return fs[0]
}

// then queues fates for the next requests of kind k.
func (n *wnode) then(k driver.OpKind, fs ...fate) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.fates[k] = append(n.fates[k], fs...)
}

var errLost = errors.New("lockingtest: request or answer lost")

func (n *wnode) Do(ctx context.Context, op driver.Op) (driver.Result, error) {
	switch n.next(op.Kind()) {
	case lost:
		return driver.Result{}, errLost
	case mute:
		_, _ = n.Node.Do(ctx, op)
		return driver.Result{}, errLost
	case sequence:
		select {
		case <-n.turn:
		case <-ctx.Done():
			return driver.Result{}, ctx.Err()
		}
		defer func() { n.done <- struct{}{} }()
	}
	return n.Node.Do(ctx, op)
}

// replica is one locker over wrapped nodes.
type replica struct {
	locking.Locker
	nodes []*wnode
	t     *testing.T
}

// nodeOpTimeout is the op timeout of the checks' lockers: above a loaded
// CI host's latency to a local Redis.
const nodeOpTimeout = 200 * time.Millisecond

func newReplica(t *testing.T, w World, name string) *replica {
	r := &replica{t: t}
	var nodes []driver.Node
	for _, n := range w(name) {
		wn := &wnode{Node: n, fates: map[driver.OpKind][]fate{}, turn: make(chan struct{}), done: make(chan struct{})}
		r.nodes = append(r.nodes, wn)
		nodes = append(nodes, wn)
	}
	l, err := redlock.OnNodes(nodes, "lockingtest", nodeOpTimeout,
		locking.Options{Replica: name, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	r.Locker = l
	return r
}

// stepWait bounds how long step waits for a sequenced request: one that
// never comes (its call gave up before reaching the store) fails the
// check with a message instead of hanging the package until its timeout.
const stepWait = 10 * time.Second

// step lets the sequenced request of r on store i run, and waits until it
// has.
func (r *replica) step(i int) {
	r.t.Helper()
	timeout := time.NewTimer(stepWait)
	defer timeout.Stop()
	select {
	case r.nodes[i].turn <- struct{}{}:
	case <-timeout.C:
		r.t.Fatalf("store %d: the sequenced request never came (its call gave up before reaching the store)", i)
	}
	select {
	case <-r.nodes[i].done:
	case <-timeout.C:
		r.t.Fatalf("store %d: the sequenced request did not finish", i)
	}
}

type claimed struct {
	lease *locking.Lease
	err   error
}

// claimAsync starts r's Claim of key; its answer comes on the channel.
func claimAsync(t *testing.T, r *replica, key locking.Key, ttl time.Duration) <-chan claimed {
	out := make(chan claimed, 1)
	go func() {
		l, err := r.Claim(ctx(t), key, ttl)
		out <- claimed{l, err}
	}()
	return out
}

// Issue #21, bug 2. R1 wins a claim on stores 0 and 1, starts its work
// (confirmed by a renewal) and dies. Two settlers, B and C, claim the key
// at once: store 0 runs B first (B takes R1's claim over, C is refused by
// B's live lease), store 1 runs C first (the same the other way round),
// store 2 has nothing (B's claim is new there, C is refused). The claim
// is on a majority whichever lease refused a settler there: exactly one
// settler gets it as abandoned and started, the other is refused, and
// once the winner's done marker is written nobody can claim the key or
// report it again. (Before the fix, B counted R1's claim on store 0 only,
// took it for a leftover, and its end closed the started run silently.)
func testConcurrentSettlers(t *testing.T, w World) {
	key := locking.Key{Family: family(t), Name: "slot:1"}
	const ttl = 600 * time.Millisecond
	r1, b, c := newReplica(t, w, "r1"), newReplica(t, w, "b"), newReplica(t, w, "c")

	r1.nodes[2].then(driver.OpAcquire, lost)
	dead, err := r1.Claim(ctx(t), key, ttl)
	require.NoError(t, err)
	dead.Start()
	r1.nodes[2].then(driver.OpExtend, lost)
	require.NoError(t, dead.Extend(ctx(t)), "the renewal that confirms the start")
	time.Sleep(ttl + 200*time.Millisecond) // r1 died: its lease expires, its claim stays

	for i := range 3 {
		b.nodes[i].then(driver.OpAcquire, sequence)
		c.nodes[i].then(driver.OpAcquire, sequence)
	}
	bc, cc := claimAsync(t, b, key, 10*time.Second), claimAsync(t, c, key, 10*time.Second)
	b.step(0)
	c.step(0)
	c.step(1)
	b.step(1)
	b.step(2)
	c.step(2)
	gb, gc := <-bc, <-cc

	require.NoError(t, gb.err, "B won stores 0 and 2")
	require.Error(t, gc.err, "C won store 1 only")
	require.False(t, gb.lease.Grant().Leftover, "the claim is on stores 0 and 1: not a leftover")
	ab := gb.lease.Grant().Abandoned
	require.NotNil(t, ab, "B must learn that the started run was abandoned")
	require.Equal(t, dead.Grant().ID, ab.ID)
	require.True(t, ab.Started, "the run confirmed its start")

	entry := locking.LogEntry{Score: 1, Value: "abandoned"}
	require.NoError(t, gb.lease.End(ctx(t), locking.Ending{DoneTTL: time.Minute, Note: "abandoned", Entry: &entry, Keep: 10}).Err)
	got, err := b.ReadLog(ctx(t), key.Family, 0, 10)
	require.NoError(t, err)
	require.Equal(t, []locking.LogEntry{entry}, got, "the abandoned run is in the history, once")
	for _, r := range []*replica{c, b, r1} {
		_, err := r.Claim(ctx(t), key, time.Second)
		wantHeld(t, err, true) // the slot is done: never run, never reported again
	}
}

// Issue #21, bug 1. A claim whose answers are lost on two stores of three
// (they ran it: a slow node) fails; its undo is lost on those two stores
// too. The undo is sent again until they answer, so that once the lease
// would have expired, the next Claim finds nothing: a clean win, not an
// abandoned claim (before the fix: one undo round, lost, and a phantom
// run.abandoned for a run that never started).
func testUndoMadeSure(t *testing.T, w World) {
	key := locking.Key{Family: family(t), Name: "slot:1"}
	const ttl = 600 * time.Millisecond
	a, b := newReplica(t, w, "a"), newReplica(t, w, "b")
	for i := 1; i < 3; i++ {
		a.nodes[i].then(driver.OpAcquire, mute)
		a.nodes[i].then(driver.OpRelease, lost)
	}
	_, err := a.Claim(ctx(t), key, ttl)
	require.ErrorIs(t, err, locking.ErrNoQuorum, "one answer of three")
	time.Sleep(ttl + 400*time.Millisecond)

	lease, err := b.Claim(ctx(t), key, 10*time.Second)
	require.NoError(t, err)
	require.Nil(t, lease.Grant().Abandoned, "the failed claim was undone: nothing was abandoned")
	require.False(t, lease.Grant().Leftover, "the undo reached every store")
	require.NoError(t, lease.End(ctx(t), locking.Ending{}).Err)
}
