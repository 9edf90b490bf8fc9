package redlock

import (
	"errors"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redistest"
)

// Permits on real Redis (locking.Semaphore), node by node: a permit is
// held on a majority, a node down does not stop a semaphore, and a permit
// that could not reach a majority leaves nothing where it landed.

// TestRedlockSemaphoreMajority: with limit 2 over 3 nodes, three holders
// cannot each hold a majority (the counterexample to a per-node counter:
// {1,2}, {2,3}, {1,3}): the third finds every permit held on a majority.
// Each permit lives on every node that answered, with its holder.
func TestRedlockSemaphoreMajority(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 10*time.Second)
	sem := locking.Semaphore{Name: "heavy", Limit: 2}
	var held []*locking.Lease
	for i, r := range []string{"r1", "r2"} {
		p, err := sem.Acquire(ctx, newTestRedlock(t, c.Addrs(), r), 10*time.Second, 0)
		if err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		held = append(held, p)
		for n := range 3 {
			if v := c.Node(n).Client().Get(ctx, rkey(sem.Permit(i))).Val(); v == "" || v[len(v)-len(r):] != r {
				t.Fatalf("node %d holds %q for permit %d, want %s's lease", n, v, i, r)
			}
		}
	}
	_, err := sem.Acquire(ctx, newTestRedlock(t, c.Addrs(), "r3"), 10*time.Second, 1)
	if !locking.IsHeld(err) {
		t.Fatalf("a third holder of 2 permits: %v", err)
	}
	for _, p := range held {
		if err := p.End(ctx, locking.Ending{}).Err; err != nil {
			t.Fatal(err)
		}
	}
	for n := range 3 {
		if k := c.Node(n).Client().Keys(ctx, "t:{_group:heavy}:permit:*").Val(); len(k) != 0 {
			t.Fatalf("node %d keeps %v after the permits ended", n, k)
		}
	}
}

// TestRedlockSemaphoreNodeDown: one node of three down, permits are still
// handed out and refused by the majority; two down, none is, and the
// surviving node keeps no trace of the attempt.
func TestRedlockSemaphoreNodeDown(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 10*time.Second)
	l := newTestRedlock(t, c.Addrs(), "me")
	sem := locking.Semaphore{Name: "one", Limit: 1}
	if err := c.Node(2).Kill(); err != nil {
		t.Fatal(err)
	}
	p, err := sem.Acquire(ctx, l, 10*time.Second, 0)
	if err != nil {
		t.Fatalf("one node down: %v", err)
	}
	if _, err := sem.Acquire(ctx, newTestRedlock(t, c.Addrs(), "other"), 10*time.Second, 0); !locking.IsHeld(err) {
		t.Fatalf("a second permit of 1 with one node down: %v", err)
	}
	if err := p.End(ctx, locking.Ending{}).Err; err != nil {
		t.Fatal(err)
	}
	if err := c.Node(1).Kill(); err != nil {
		t.Fatal(err)
	}
	_, err = sem.Acquire(ctx, l, 10*time.Second, 0)
	if !errors.Is(err, locking.ErrNoQuorum) || locking.IsHeld(err) {
		t.Fatalf("two nodes of three down: %v, want no quorum", err)
	}
	if n := c.Node(0).Client().Exists(ctx, rkey(sem.Permit(0))).Val(); n != 0 {
		t.Fatalf("node 0 kept the minority permit: %q", c.Node(0).Client().Get(ctx, rkey(sem.Permit(0))).Val())
	}
}
