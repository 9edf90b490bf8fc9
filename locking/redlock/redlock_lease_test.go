package redlock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/redistest"
)

// A lease through its life: renewed, lost, stale, undone, taken late.

// The watchdog keeps a lease through 5×TTL of work while another client
// keeps trying to take it.
func TestRedlockWatchdogHolds(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 20*time.Second)
	// Renewals get 250ms each: a loaded CI machine must not turn a slow
	// renewal into a lost lease; the point here is the watchdog's cadence.
	slow := func(cfg *Config) { cfg.OpTimeout = 250 * time.Millisecond }
	a := newTestRedlock(t, c.Addrs(), "a", slow)
	b := newTestRedlock(t, c.Addrs(), "b", slow)
	key := locking.Key{Family: "job", Name: "long"}
	const ttl = 600 * time.Millisecond
	lease, err := a.Acquire(ctx, key, ttl)
	if err != nil {
		t.Fatal(err)
	}
	kctx := lease.Keep(ctx)
	end := time.Now().Add(5 * ttl)
	for time.Now().Before(end) {
		if _, err := b.Acquire(ctx, key, ttl); !errors.Is(err, locking.ErrNotAcquired) {
			t.Fatalf("b during a's work: %v", err)
		}
		select {
		case <-kctx.Done():
			t.Fatalf("kept context ended: %v", context.Cause(kctx))
		case <-lease.Lost():
			t.Fatal("lease lost")
		case <-time.After(ttl / 4):
		}
	}
	if err := lease.End(ctx, locking.Ending{}).Err; err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(ctx, key, ttl); err != nil {
		t.Fatalf("b after release: %v", err)
	}
}

// Nodes paused past the lease's validity: the watchdog cannot renew, the
// lease is lost and its context canceled with ErrLockLost.
func TestRedlockPausedNodesLoseLease(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 20*time.Second)
	l := newTestRedlock(t, c.Addrs(), "a")
	const ttl = 500 * time.Millisecond
	lease, err := l.Acquire(ctx, locking.Key{Family: "job", Name: "paused"}, ttl)
	if err != nil {
		t.Fatal(err)
	}
	kctx := lease.Keep(ctx)
	for _, i := range []int{0, 2} {
		if err := c.Node(i).Pause(); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-kctx.Done():
	case <-time.After(5 * ttl):
		t.Fatal("lease not lost while a majority is paused")
	}
	if !errors.Is(context.Cause(kctx), locking.ErrLockLost) {
		t.Fatalf("cause: %v", context.Cause(kctx))
	}
	select {
	case <-lease.Lost():
	default:
		t.Fatal("Lost not closed")
	}
	if time.Now().Before(lease.ValidUntil()) {
		t.Fatal("lost before ValidUntil")
	}
	for _, i := range []int{0, 2} {
		if err := c.Node(i).Resume(); err != nil {
			t.Fatal(err)
		}
	}
	// The lease is taken as lost up to the drift allowance before the keys
	// expire on the nodes, so Release may still find them (nil) or find
	// them expired (ErrLockLost); either way it leaves nothing behind, not
	// even the copy the watchdog kept alive on node 1.
	if err := lease.End(ctx, locking.Ending{}).Err; err != nil && !errors.Is(err, locking.ErrLockLost) {
		t.Fatalf("release after loss: %v", err)
	}
	for _, n := range c.Nodes() {
		if n.Client().Exists(ctx, "t:{job}:paused").Val() != 0 {
			t.Fatalf("node %s still has the key", n.Addr())
		}
	}
}

// A stale holder (its lease expired, someone else acquired) can neither
// extend nor release the new holder's lock.
func TestRedlockStaleTokenCannotReleaseOrExtend(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 10*time.Second)
	a := newTestRedlock(t, c.Addrs(), "a")
	b := newTestRedlock(t, c.Addrs(), "b")
	key := locking.Key{Family: "job", Name: "stale"}
	la, err := a.Acquire(ctx, key, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	stale := driver.Lease{Key: key, Value: storedValue(t, c, key, la), TTL: 300 * time.Millisecond}
	time.Sleep(400 * time.Millisecond)
	lb, err := b.Acquire(ctx, key, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	vb := storedValue(t, c, key, lb)
	// Ask the nodes directly with the stale value: the front end would
	// refuse before asking, as a's ValidUntil has passed.
	ab := driverOf(a)
	if err := ab.Extend(ctx, driver.Lease{Key: key, Value: stale.Value, TTL: time.Minute}, false); !errors.Is(err, locking.ErrLockLost) {
		t.Fatalf("stale extend: %v", err)
	}
	if err := ab.Release(ctx, stale, driver.End{}).Err; !errors.Is(err, locking.ErrLockLost) {
		t.Fatalf("stale release: %v", err)
	}
	if err := ab.Release(ctx, stale, driver.End{Done: "done|a|x", DoneTTL: time.Minute}).Err; !errors.Is(err, locking.ErrLockLost) {
		t.Fatalf("stale mark done: %v", err)
	}
	if err := la.Extend(ctx); !errors.Is(err, locking.ErrLockLost) {
		t.Fatalf("stale lease Extend: %v", err)
	}
	if err := la.End(ctx, locking.Ending{}).Err; !errors.Is(err, locking.ErrLockLost) {
		t.Fatalf("stale lease Release: %v", err)
	}
	for _, n := range c.Nodes() {
		if v := n.Client().Get(ctx, rkey(key)).Val(); v != vb {
			t.Fatalf("node %s: %q, want b's value", n.Addr(), v)
		}
		if ttl := n.Client().PTTL(ctx, rkey(key)).Val(); ttl > 10*time.Second {
			t.Fatalf("node %s: ttl %v was extended by the stale holder", n.Addr(), ttl)
		}
	}
	if err := lb.End(ctx, locking.Ending{}).Err; err != nil {
		t.Fatal(err)
	}
}

// An acquisition that a frozen node runs only after its undo (the node
// resumes and runs what had queued on its connections in no set order)
// changes nothing there: the undo of a node that did not answer left a
// tombstone of the value, which the acquire script honours. Here the undo
// runs first on every node, then the "late" acquisition of a joint claim.
func TestRedlockUndoTombstoneRefusesALateAcquire(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 10*time.Second)
	l := newTestRedlock(t, c.Addrs(), "a")
	r := driverOf(l)
	s := jointSpec("tomb")
	silent := errors.New("no answer")
	r.undo(ctx, s, nil, []error{silent, silent, silent})
	op := jointOp(r, s)
	for _, n := range r.nodes {
		res, err := n.Do(ctx, op)
		if err != nil || res.Status != 0 || res.AlsoStatus != 0 {
			t.Fatalf("late acquisition on %s: %+v, %v; want refused", n.Addr(), res, err)
		}
	}
	// Nothing was left: another replica claims the slot with the job lease.
	b := newTestRedlock(t, c.Addrs(), "b")
	lease, err := b.Claim(ctx, s.Key, 5*time.Second, locking.With(s.Also.Key))
	if err != nil || lease.Grant().Abandoned != nil || lease.Grant().Leftover || lease.Grant().Joined == nil {
		t.Fatalf("claim after the late acquisition: %v, %v", lease, err)
	}
	// Without the tombstone the same late acquisition takes the keys.
	s2 := s
	s2.Key, s2.Value = locking.Key{Family: "tomb", Name: "slot:2"}, testToken()+"|a"
	r.undo(ctx, s2, nil, nil)
	op2 := jointOp(r, s2)
	if res, err := r.nodes[0].Do(ctx, op2); err != nil || res.Status != 1 {
		t.Fatalf("acquisition without a tombstone: %+v, %v; want set", res, err)
	}
}

// A joint acquisition (claim with job lease) that a node runs long after
// it was sent takes the claim there, as any claim, but not the job lease:
// a job lease left on a majority by requests that queued on frozen nodes
// would keep the job's next runs out for a ttl (scheduler
// TestRedisQuorumLost).
func TestRedlockLateJointAcquireTakesNoJobLease(t *testing.T) {
	c := redistest.Start(t, 1)
	ctx := tctx(t, 10*time.Second)
	l := newTestRedlock(t, c.Addrs(), "a")
	r := driverOf(l)
	s := jointSpec("late")
	op := jointOp(r, s)
	op.SentMS, op.FreshMS = time.Now().Add(-3*time.Second).UnixMilli(), 1100
	res, err := r.nodes[0].Do(ctx, op)
	if err != nil || res.Status != 1 || res.AlsoStatus != 0 {
		t.Fatalf("late joint acquisition: %+v, %v; want the claim without the job lease", res, err)
	}
	if v := c.Node(0).Client().Get(ctx, r.key(s.Also.Key)).Val(); v != "" {
		t.Fatalf("job lease %q set by a late request", v)
	}
	op.Field, op.Key = "slot:2", r.key(locking.Key{Family: "late", Name: "slot:2"})
	op.SentMS = time.Now().UnixMilli()
	if res, err := r.nodes[0].Do(ctx, op); err != nil || res.Status != 1 || res.AlsoStatus != 1 {
		t.Fatalf("fresh joint acquisition: %+v, %v; want both", res, err)
	}
}
