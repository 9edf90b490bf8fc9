package locking

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/locking/driver"
)

// jumpClock is the real (in a synctest bubble: fake) clock plus an offset
// the test can move, to model a process that was paused.
type jumpClock struct{ offset atomic.Int64 }

func (c *jumpClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *jumpClock) NewTimer(d time.Duration) Timer {
	return SystemClock(0).NewTimer(d)
}

func TestLocalHeldDoneAndExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		a := NewLocal(Options{Replica: "a"})
		b := newLocker(a.(*locker).b, Options{Replica: "b"}) // same store, second holder
		key := Key{Family: "job", Name: "slot:1"}

		la, err := a.Acquire(ctx, key, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_, err = b.Acquire(ctx, key, time.Second)
		var held *HeldError
		if !errors.As(err, &held) || !errors.Is(err, ErrNotAcquired) || held.Holder != "a" || held.Done {
			t.Fatalf("second acquire: %v (%+v)", err, held)
		}
		if err := la.End(ctx, Ending{DoneTTL: 3 * time.Second, Note: "succeeded"}).Err; err != nil {
			t.Fatal(err)
		}
		_, err = b.Acquire(ctx, key, time.Second)
		if !errors.As(err, &held) || !held.Done || held.Note != "succeeded" || held.Holder != "a" {
			t.Fatalf("acquire on done marker: %v (%+v)", err, held)
		}
		time.Sleep(3 * time.Second)
		lb, err := b.Acquire(ctx, key, time.Second)
		if err != nil {
			t.Fatalf("acquire after marker expiry: %v", err)
		}
		if lb.Token() <= la.Token() {
			t.Fatalf("token %d not above %d", lb.Token(), la.Token())
		}
		// A stale holder cannot release or extend the new holder's lock.
		if err := la.End(ctx, Ending{}).Err; err != nil {
			t.Fatalf("second release of an ended lease must be a no-op: %v", err)
		}
		stale := newLease(a.(*locker), la.spec, driver.Grant{Token: la.token}, time.Now().Add(time.Second))
		if err := stale.Extend(ctx); !errors.Is(err, ErrLockLost) {
			t.Fatalf("stale extend: %v", err)
		}
		if err := stale.End(ctx, Ending{}).Err; !errors.Is(err, ErrLockLost) {
			t.Fatalf("stale release: %v", err)
		}
		if _, err := a.Acquire(ctx, key, time.Second); !errors.Is(err, ErrNotAcquired) {
			t.Fatalf("stale release freed the key: %v", err)
		}
	})
}

func TestLocalKeepRenewsAndReleaseStopsWatchdog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		l := NewLocal(Options{Replica: "a"})
		ttl := 300 * time.Millisecond
		lease, err := l.Acquire(ctx, Key{Family: "job", Name: "run"}, ttl)
		if err != nil {
			t.Fatal(err)
		}
		kctx := lease.Keep(ctx)
		time.Sleep(5 * ttl)
		if err := kctx.Err(); err != nil {
			t.Fatalf("kept context ended after 5 TTLs: %v (%v)", err, context.Cause(kctx))
		}
		if _, err := l.Acquire(ctx, Key{Family: "job", Name: "run"}, ttl); !errors.Is(err, ErrNotAcquired) {
			t.Fatalf("kept lease expired: %v", err)
		}
		if err := lease.End(ctx, Ending{}).Err; err != nil {
			t.Fatal(err)
		}
		if kctx.Err() == nil {
			t.Fatal("kept context survives Release")
		}
		// synctest.Test fails if the watchdog goroutine outlives End.
	})
}

func TestLocalLostWhenKeyTaken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		l := NewLocal(Options{Replica: "a"})
		ttl := 300 * time.Millisecond
		key := Key{Family: "job", Name: "run"}
		lease, err := l.Acquire(ctx, key, ttl)
		if err != nil {
			t.Fatal(err)
		}
		kctx := lease.Keep(ctx)
		be := l.(*locker).b.(*localDriver)
		be.mu.Lock()
		delete(be.keys, key) // the store lost the key (e.g. a restart)
		be.mu.Unlock()
		<-kctx.Done()
		if !errors.Is(context.Cause(kctx), ErrLockLost) {
			t.Fatalf("cause %v", context.Cause(kctx))
		}
		select {
		case <-lease.Lost():
		default:
			t.Fatal("Lost not closed")
		}
		if !lease.ValidUntil().After(time.Now()) {
			t.Fatal("lost was noticed only at expiry, not at the first renewal")
		}
		lease.End(ctx, Ending{})
	})
}

func TestLocalLostAfterPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		clock := &jumpClock{}
		l := NewLocal(Options{Replica: "a", Clock: clock})
		ttl := 300 * time.Millisecond
		lease, err := l.Acquire(ctx, Key{Family: "job", Name: "run"}, ttl)
		if err != nil {
			t.Fatal(err)
		}
		kctx := lease.Keep(ctx)
		clock.offset.Store(int64(2 * ttl)) // the process "slept" through its lease
		<-kctx.Done()
		if !errors.Is(context.Cause(kctx), ErrLockLost) {
			t.Fatalf("cause %v", context.Cause(kctx))
		}
		lease.End(ctx, Ending{})
	})
}

func TestLocalRecordsAndCancel(t *testing.T) {
	l := NewLocal(Options{Replica: "a"})
	ctx := context.Background()
	key := Key{Family: "job", Name: "last"}
	for _, v := range []int64{5, 3, 9, 7} {
		if err := l.AdvanceRecord(ctx, key, v); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := l.ReadRecord(ctx, key); err != nil || v != 9 {
		t.Fatalf("record = %d, %v; want 9", v, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.Acquire(cctx, Key{Family: "job", Name: "x"}, time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("acquire on canceled ctx: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx, Key{Family: "job", Name: "x"}, time.Second); !errors.Is(err, ErrClosed) {
		t.Fatalf("acquire after close: %v", err)
	}
}

// End with a done marker on a key that expired meanwhile (a paused holder) still leaves
// the done marker, as the Redlock release script does where the key is
// absent: the slot ran, and must not run again.
func TestLocalMarkDoneAfterExpiryLeavesMarker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		clock := &jumpClock{}
		l := NewLocal(Options{Replica: "a", Clock: clock})
		key := Key{Family: "job", Name: "slot"}
		lease, err := l.Acquire(ctx, key, 300*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		clock.offset.Store(int64(time.Second)) // the key expired
		if err := lease.End(ctx, Ending{DoneTTL: time.Minute, Note: "succeeded"}).Err; !errors.Is(err, ErrLockLost) {
			t.Fatalf("MarkDone on an expired key: %v, want ErrLockLost", err)
		}
		_, err = l.Acquire(ctx, key, 300*time.Millisecond)
		var held *HeldError
		if !errors.As(err, &held) || !held.Done || held.Note != "succeeded" || held.Holder != "a" {
			t.Fatalf("Acquire after MarkDone on an expired key: %v, want a done marker", err)
		}
	})
}

// TestLocalTokensRiseAcrossRestarts: the in-process store's state dies
// with its process; the tokens a restarted one hands out are still above
// those of the process before it (a fence guard keeps the highest it saw,
// and refused every write of a restart that counted from 1 again).
func TestLocalTokensRiseAcrossRestarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		key := Key{Family: "job", Name: "slot:1"}
		var last uint64
		for restart := range 3 {
			l := NewLocal(Options{Replica: "only"})
			for range 5 {
				lease, err := l.Acquire(ctx, key, time.Second)
				if err != nil {
					t.Fatal(err)
				}
				if lease.Token() <= last {
					t.Fatalf("restart %d: token %d after %d", restart, lease.Token(), last)
				}
				last = lease.Token()
				if err := lease.End(ctx, Ending{}).Err; err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond) // the process restarts
		}
	})
}
