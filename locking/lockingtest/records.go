package lockingtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// Cases on the rest of the Locker: records, canceled contexts, Ping, Mode
// and Close.

func testRecords(t *testing.T, l locking.Locker) {
	fam := family(t)
	k, other := locking.Key{Family: fam, Name: "last"}, locking.Key{Family: fam, Name: "other"}
	read := func(key locking.Key) int64 {
		t.Helper()
		v, err := l.ReadRecord(ctx(t), key)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := read(k); v != 0 {
		t.Fatalf("unwritten record = %d", v)
	}
	for _, step := range []struct{ advance, want int64 }{{5, 5}, {3, 5}, {1_700_000_000, 1_700_000_000}, {1_699_999_999, 1_700_000_000}} {
		if err := l.AdvanceRecord(ctx(t), k, step.advance); err != nil {
			t.Fatal(err)
		}
		if v := read(k); v != step.want {
			t.Fatalf("after advance(%d): %d, want %d", step.advance, v, step.want)
		}
	}
	if v := read(other); v != 0 {
		t.Fatalf("records are not independent: %d", v)
	}
	// A record is not a lock: the key with the same name can still be taken.
	lease := mustAcquire(t, l, locking.Key{Family: fam, Name: "lock"}, time.Second)
	if err := lease.End(ctx(t), locking.Ending{}).Err; err != nil {
		t.Fatal(err)
	}
}

func testCanceled(t *testing.T, l locking.Locker) {
	key := locking.Key{Family: family(t), Name: "k"}
	lease := mustAcquire(t, l, key, 5*time.Second)
	c, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Acquire(c, locking.Key{Family: key.Family, Name: "other"}, time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire: %v", err)
	}
	if err := lease.Extend(c); !errors.Is(err, context.Canceled) {
		t.Fatalf("Extend: %v", err)
	}
	if err := l.AdvanceRecord(c, key, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("AdvanceRecord: %v", err)
	}
	if _, err := l.ReadRecord(c, key); !errors.Is(err, context.Canceled) {
		t.Fatalf("ReadRecord: %v", err)
	}
	if _, err := l.Ping(c); !errors.Is(err, context.Canceled) {
		t.Fatalf("Ping: %v", err)
	}
	// Keep on a canceled context ends at once, without ErrLockLost.
	k := lease.Keep(c)
	<-k.Done()
	if errors.Is(context.Cause(k), locking.ErrLockLost) {
		t.Fatal("Keep(canceled ctx) reported ErrLockLost")
	}
	// End works on a canceled context (it detaches from it).
	if err := lease.End(c, locking.Ending{}).Err; err != nil {
		t.Fatalf("Release(canceled ctx): %v", err)
	}
	again := mustAcquire(t, l, key, time.Second)
	if err := again.End(ctx(t), locking.Ending{}).Err; err != nil {
		t.Fatal(err)
	}
}

func testPingModeClose(t *testing.T, l locking.Locker) {
	st, err := l.Ping(ctx(t))
	if err != nil || len(st) == 0 {
		t.Fatalf("Ping: %v %+v", err, st)
	}
	for _, s := range st {
		if !s.Up || s.Addr == "" || s.Err != nil {
			t.Fatalf("node status %+v", s)
		}
	}
	if l.Mode() == "" {
		t.Fatal("empty Mode")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx(t), locking.Key{Family: family(t), Name: "k"}, time.Second); !errors.Is(err, locking.ErrClosed) {
		t.Fatalf("Acquire after Close: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}
