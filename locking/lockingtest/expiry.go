package lockingtest

import (
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// Cases on how a key frees itself: a done marker until its TTL, a lease at
// the end of its TTL.

func testDoneMarker(t *testing.T, l locking.Locker) {
	key := locking.Key{Family: family(t), Name: "slot"}
	lease := mustAcquire(t, l, key, 5*time.Second)
	if err := lease.End(ctx(t), locking.Ending{DoneTTL: 300 * time.Millisecond, Note: "succeeded"}).Err; err != nil {
		t.Fatal(err)
	}
	// An End after an End does nothing.
	if err := lease.End(ctx(t), locking.Ending{}).Err; err != nil {
		t.Fatalf("Release after MarkDone: %v", err)
	}
	_, err := l.Acquire(ctx(t), key, time.Second)
	held := wantHeld(t, err, true)
	if held.Note != "succeeded" || held.Holder != lease.Grant().Holder {
		t.Fatalf("done marker: %+v", held)
	}
	time.Sleep(400 * time.Millisecond)
	next := mustAcquire(t, l, key, time.Second)
	if next.Token() <= lease.Token() {
		t.Fatalf("token %d after %d", next.Token(), lease.Token())
	}
	if err := next.End(ctx(t), locking.Ending{}).Err; err != nil {
		t.Fatal(err)
	}
}

func testExpiry(t *testing.T, l locking.Locker) {
	key := locking.Key{Family: family(t), Name: "k"}
	lease := mustAcquire(t, l, key, 300*time.Millisecond)
	_, err := l.Acquire(ctx(t), key, time.Second)
	wantHeld(t, err, false)
	time.Sleep(400 * time.Millisecond)
	if !time.Now().After(lease.ValidUntil()) {
		t.Fatal("ValidUntil after the TTL")
	}
	next := mustAcquire(t, l, key, time.Second)
	if err := next.End(ctx(t), locking.Ending{}).Err; err != nil {
		t.Fatal(err)
	}
}
