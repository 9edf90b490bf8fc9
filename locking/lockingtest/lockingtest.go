// Package lockingtest is a conformance suite for locking.Locker
// implementations, in the manner of testing/slogtest: every implementation
// (Redlock over real Redis nodes, Local in-process) must pass the same
// checks, so the scheduler cannot tell them apart.
//
//	func TestConformance(t *testing.T) {
//		lockingtest.Run(t, func(t *testing.T) locking.Locker {
//			l := locking.NewLocal(locking.Options{Replica: "r1"})
//			t.Cleanup(func() { l.Close() })
//			return l
//		})
//	}
//
// newLocker is called once per subtest; lockers of different subtests may
// share a store (the suite uses a fresh key family in every subtest). The
// suite runs on real time with TTLs of a few hundred milliseconds, so the
// whole run takes a few seconds. It counts the process's goroutines, so do
// not run it in parallel with other tests (no t.Parallel).
package lockingtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	mrand "math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// Run runs every conformance check as a subtest of t.
func Run(t *testing.T, newLocker func(t *testing.T) locking.Locker) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.fn(t, newLocker(t))
		})
	}
}

// RunSynctest is Run with each check in its own testing/synctest bubble,
// on virtual time: for stores that live in the bubble (locking/locksim).
// newLocker is called inside the bubble.
func RunSynctest(t *testing.T, newLocker func(t *testing.T) locking.Locker) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { c.fn(t, newLocker(t)) })
		})
	}
}

var cases = []struct {
	name string
	fn   func(t *testing.T, l locking.Locker)
}{
	{"ExclusiveHold", testExclusiveHold},
	{"ConcurrentExclusion", testConcurrentExclusion},
	{"TokensIncrease", testTokensIncrease},
	{"StaleLeaseCannotReleaseOrExtend", testStale},
	{"DoneMarker", testDoneMarker},
	{"TTLExpiryFreesKey", testExpiry},
	{"KeepRenewsAcrossTTLs", testKeep},
	{"ReleaseStopsWatchdog", testNoGoroutineLeft},
	{"Records", testRecords},
	{"CanceledContext", testCanceled},
	{"PingModeClose", testPingModeClose},
	{"ClaimAbandoned", testClaimAbandoned},
	{"ClaimRelease", testClaimRelease},
	{"ClaimKept", testClaimKept},
	{"ClaimOrphan", testClaimOrphan},
	{"TokensUnique", testTokensUnique},
	{"BadKeys", testBadKeys},
}

// family returns a key family unique to this run and subtest.
func family(t *testing.T) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
	return name + "-" + hex.EncodeToString(b[:])
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func mustAcquire(t *testing.T, l locking.Locker, key locking.Key, ttl time.Duration) *locking.Lease {
	t.Helper()
	lease, err := l.Acquire(ctx(t), key, ttl)
	if err != nil {
		t.Fatalf("Acquire(%s): %v", key, err)
	}
	return lease
}

func wantHeld(t *testing.T, err error, done bool) *locking.HeldError {
	t.Helper()
	var held *locking.HeldError
	if !errors.As(err, &held) || !errors.Is(err, locking.ErrNotAcquired) {
		t.Fatalf("want a *HeldError matching ErrNotAcquired, got %v", err)
	}
	if held.Done != done {
		t.Fatalf("HeldError.Done = %v, want %v (%v)", held.Done, done, err)
	}
	return held
}

func testExclusiveHold(t *testing.T, l locking.Locker) {
	key := locking.Key{Family: family(t), Name: "k"}
	lease := mustAcquire(t, l, key, 5*time.Second)
	if lease.Key() != key {
		t.Fatalf("Key() = %v", lease.Key())
	}
	if lease.Token() == 0 {
		t.Fatal("token 0")
	}
	if !time.Now().Before(lease.ValidUntil()) || lease.ValidUntil().After(time.Now().Add(5*time.Second)) {
		t.Fatalf("ValidUntil %v not within the TTL", lease.ValidUntil())
	}
	_, err := l.Acquire(ctx(t), key, 5*time.Second)
	held := wantHeld(t, err, false)
	if held.Holder != lease.Holder() || held.Key != key {
		t.Fatalf("HeldError %+v, want holder %q", held, lease.Holder())
	}
	// Another key is free.
	other := mustAcquire(t, l, locking.Key{Family: key.Family, Name: "other"}, time.Second)
	if err := other.Release(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if err := lease.Release(ctx(t)); err != nil {
		t.Fatal(err)
	}
	again := mustAcquire(t, l, key, time.Second)
	if err := again.Release(ctx(t)); err != nil {
		t.Fatal(err)
	}
}

func testConcurrentExclusion(t *testing.T, l locking.Locker) {
	key := locking.Key{Family: family(t), Name: "k"}
	var inside, wins atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	// Until 30 acquisitions or 5s: safety is the point, not speed.
	stop := time.Now().Add(5 * time.Second)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) && wins.Load() < 30 {
				lease, err := l.Acquire(ctx(t), key, 5*time.Second)
				if err != nil {
					if !errors.Is(err, locking.ErrNotAcquired) && !errors.Is(err, locking.ErrNoQuorum) {
						errs <- err
						return
					}
					time.Sleep(time.Duration(1+mrand.IntN(3000)) * time.Microsecond)
					continue
				}
				if n := inside.Add(1); n != 1 {
					errs <- errors.New("two holders at once")
				}
				wins.Add(1)
				time.Sleep(100 * time.Microsecond)
				inside.Add(-1)
				if err := lease.Release(ctx(t)); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if wins.Load() == 0 {
		t.Fatal("no goroutine ever acquired the key")
	}
}

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
	if err := a.Release(ctx(t)); err != nil {
		t.Fatal(err)
	}
	b := mustAcquire(t, l, k2, 5*time.Second) // another key of the family
	next(b)
	a = mustAcquire(t, l, k1, 5*time.Second) // while b is held
	next(a)
	if err := b.MarkDone(ctx(t), time.Minute, "x"); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx(t)); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ { // re-acquisitions of one key
		a = mustAcquire(t, l, k1, 5*time.Second)
		next(a)
		if err := a.Release(ctx(t)); err != nil {
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
	if err := old.Release(ctx(t)); !errors.Is(err, locking.ErrLockLost) {
		t.Fatalf("stale Release: %v", err)
	}
	_, err := l.Acquire(ctx(t), key, time.Second)
	wantHeld(t, err, false)
	if err := cur.Extend(ctx(t)); err != nil {
		t.Fatalf("current holder's Extend: %v", err)
	}
	if err := cur.Release(ctx(t)); err != nil {
		t.Fatal(err)
	}
}

func testDoneMarker(t *testing.T, l locking.Locker) {
	key := locking.Key{Family: family(t), Name: "slot"}
	lease := mustAcquire(t, l, key, 5*time.Second)
	if err := lease.MarkDone(ctx(t), 300*time.Millisecond, "succeeded"); err != nil {
		t.Fatal(err)
	}
	// MarkDone after MarkDone (or Release) does nothing.
	if err := lease.Release(ctx(t)); err != nil {
		t.Fatalf("Release after MarkDone: %v", err)
	}
	_, err := l.Acquire(ctx(t), key, time.Second)
	held := wantHeld(t, err, true)
	if held.Note != "succeeded" || held.Holder != lease.Holder() {
		t.Fatalf("done marker: %+v", held)
	}
	time.Sleep(400 * time.Millisecond)
	next := mustAcquire(t, l, key, time.Second)
	if next.Token() <= lease.Token() {
		t.Fatalf("token %d after %d", next.Token(), lease.Token())
	}
	if err := next.Release(ctx(t)); err != nil {
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
	if err := next.Release(ctx(t)); err != nil {
		t.Fatal(err)
	}
}

func testKeep(t *testing.T, l locking.Locker) {
	key := locking.Key{Family: family(t), Name: "k"}
	const ttl = 450 * time.Millisecond
	lease := mustAcquire(t, l, key, ttl)
	first := lease.ValidUntil()
	kctx := lease.Keep(ctx(t))
	time.Sleep(4 * ttl)
	select {
	case <-kctx.Done():
		t.Fatalf("kept context ended: %v", context.Cause(kctx))
	case <-lease.Lost():
		t.Fatal("lease lost")
	default:
	}
	if !lease.ValidUntil().After(first) || !time.Now().Before(lease.ValidUntil()) {
		t.Fatalf("ValidUntil not renewed: %v (first %v)", lease.ValidUntil(), first)
	}
	_, err := l.Acquire(ctx(t), key, ttl)
	wantHeld(t, err, false)
	if err := lease.Release(ctx(t)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-kctx.Done():
	case <-time.After(time.Second):
		t.Fatal("Release did not end the kept context")
	}
	if errors.Is(context.Cause(kctx), locking.ErrLockLost) {
		t.Fatal("a released lease reported ErrLockLost")
	}
	select {
	case <-lease.Lost():
		t.Fatal("Lost closed by Release")
	default:
	}
	next := mustAcquire(t, l, key, ttl)
	if err := next.Release(ctx(t)); err != nil {
		t.Fatal(err)
	}
}

func testNoGoroutineLeft(t *testing.T, l locking.Locker) {
	key := locking.Key{Family: family(t), Name: "k"}
	// Warm up: connection pools and their helpers start on first use.
	w := mustAcquire(t, l, key, time.Second)
	w.Keep(ctx(t))
	if err := w.Release(ctx(t)); err != nil {
		t.Fatal(err)
	}
	base := settledGoroutines(0, 200*time.Millisecond)
	for i := 0; i < 5; i++ {
		lease := mustAcquire(t, l, key, 450*time.Millisecond)
		lease.Keep(ctx(t))
		lease.Keep(ctx(t))
		if i%2 == 0 {
			time.Sleep(200 * time.Millisecond) // let the watchdog renew once
		}
		if i == 4 {
			if err := lease.MarkDone(ctx(t), time.Millisecond, "x"); err != nil {
				t.Fatal(err)
			}
		} else if err := lease.Release(ctx(t)); err != nil {
			t.Fatal(err)
		}
	}
	// No goroutine of the lock layer may be left (named by its frames),
	// and the process as a whole must be back to where it was. The count
	// is process-wide: do not run this suite in parallel with other tests.
	// Release promises that no goroutine of the lease runs once it has
	// returned: check at once, without a grace period (a watchdog that
	// merely ends by itself a TTL later is a leak too).
	if stacks := allStacks(); strings.Contains(stacks, "locking.(*Lease).watch") || strings.Contains(stacks, "locking.(*redlock)") {
		t.Fatalf("lock layer goroutines left after Release:\n%s", stacks)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= base {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after Release, %d before:\n%s", n, base, allStacks())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func allStacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// settledGoroutines polls runtime.NumGoroutine until it is at most want
// (or stable when want is 0) or the time is up, and returns the last count.
func settledGoroutines(want int, within time.Duration) int {
	deadline := time.Now().Add(within)
	n := runtime.NumGoroutine()
	for time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		m := runtime.NumGoroutine()
		if (want > 0 && m <= want) || (want == 0 && m == n) {
			return m
		}
		n = m
	}
	return n
}

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
	if err := lease.Release(ctx(t)); err != nil {
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
	// Release works on a canceled context (it detaches from it).
	if err := lease.Release(c); err != nil {
		t.Fatalf("Release(canceled ctx): %v", err)
	}
	again := mustAcquire(t, l, key, time.Second)
	if err := again.Release(ctx(t)); err != nil {
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
