package lockingtest

import (
	"errors"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// Cases on fencing tokens: they increase, and a stale lease (a lower
// token) can neither release nor extend.

func testTokensIncrease(t *testing.T, l locking.Locker) {
	fam := family(t)
	k1, k2 := locking.Key{Family: fam, Name: "a"}, locking.Key{Family: fam, Name: "b"}
	var last uint64
	next := func(lease *locking.Lease) {
		t.Helper()
		if lease.Token() <= last {
			t.Fatalf("token %d not above %d", lease.Token(), last)
		}
		last = lease.Token()
	}
	a := mustAcquire(t, l, k1, 5*time.Second)
	next(a)
	if err := a.End(ctx(t), locking.Ending{}).Err; err != nil {
		t.Fatal(err)
	}
	b := mustAcquire(t, l, k2, 5*time.Second) // another key of the family
	next(b)
	a = mustAcquire(t, l, k1, 5*time.Second) // while b is held
	next(a)
	if err := b.End(ctx(t), locking.Ending{DoneTTL: time.Minute, Note: "x"}).Err; err != nil {
		t.Fatal(err)
	}
	if err := a.End(ctx(t), locking.Ending{}).Err; err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ { // re-acquisitions of one key
		a = mustAcquire(t, l, k1, 5*time.Second)
		next(a)
		if err := a.End(ctx(t), locking.Ending{}).Err; err != nil {
			t.Fatal(err)
		}
	}
}

func testStale(t *testing.T, l locking.Locker) {
	key := locking.Key{Family: family(t), Name: "k"}
	// TTLs stay well above a slow acquisition on a loaded machine: an
	// acquisition slower than its TTL is refused by design.
	old := mustAcquire(t, l, key, 300*time.Millisecond)
	time.Sleep(400 * time.Millisecond)
	cur := mustAcquire(t, l, key, 5*time.Second)
	if cur.Token() <= old.Token() {
		t.Fatalf("token %d after %d", cur.Token(), old.Token())
	}
	if err := old.Extend(ctx(t)); !errors.Is(err, locking.ErrLockLost) {
		t.Fatalf("stale Extend: %v", err)
	}
	if err := old.End(ctx(t), locking.Ending{}).Err; !errors.Is(err, locking.ErrLockLost) {
		t.Fatalf("stale Release: %v", err)
	}
	_, err := l.Acquire(ctx(t), key, time.Second)
	wantHeld(t, err, false)
	if err := cur.Extend(ctx(t)); err != nil {
		t.Fatalf("current holder's Extend: %v", err)
	}
	if err := cur.End(ctx(t), locking.Ending{}).Err; err != nil {
		t.Fatal(err)
	}
}
