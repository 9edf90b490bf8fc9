package lockingtest

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// Cases on Keep's watchdog: it renews a lease across TTLs, and no
// goroutine of it outlives End.

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
	if err := lease.End(ctx(t), locking.Ending{}).Err; err != nil {
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
	if err := next.End(ctx(t), locking.Ending{}).Err; err != nil {
		t.Fatal(err)
	}
}

func testNoGoroutineLeft(t *testing.T, l locking.Locker) {
	key := locking.Key{Family: family(t), Name: "k"}
	// Warm up: connection pools and their helpers start on first use.
	w := mustAcquire(t, l, key, time.Second)
	w.Keep(ctx(t))
	if err := w.End(ctx(t), locking.Ending{}).Err; err != nil {
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
			if err := lease.End(ctx(t), locking.Ending{DoneTTL: time.Millisecond, Note: "x"}).Err; err != nil {
				t.Fatal(err)
			}
		} else if err := lease.End(ctx(t), locking.Ending{}).Err; err != nil {
			t.Fatal(err)
		}
	}
	// No goroutine of the lock layer may be left (named by its frames),
	// and the process as a whole must be back to where it was. The count
	// is process-wide: do not run this suite in parallel with other tests.
	// End promises that no goroutine of the lease runs once it has
	// returned: check at once, without a grace period (a watchdog that
	// merely ends by itself a TTL later is a leak too).
	if stacks := allStacks(); strings.Contains(stacks, "locking.(*Lease).watch") {
		t.Fatalf("lock layer goroutines left after Release:\n%s", stacks)
	}
	// A round's fan-out goroutine that has answered (wg.Done) may still be
	// on its way out when End returns; it does no more work. Give it
	// a moment, no more.
	for deadline := time.Now().Add(100 * time.Millisecond); ; time.Sleep(time.Millisecond) {
		stacks := allStacks()
		if !strings.Contains(stacks, "locking.(*redlock)") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lock layer goroutines left after Release:\n%s", stacks)
		}
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		n := countGoroutines()
		if n <= base {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after Release, %d before:\n%s", n, base, allStacks())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lockerLived are frames of goroutines that belong to the locker or its
// Redis client, not to a lease, and come and go on their own: a node's
// sender starts with the first call that queues for it (under load, any
// call) and lives until Close; go-redis redials a node that does not
// answer (a killed shard) from a goroutine of its pool. They are not
// counted: a lease's own goroutines are, by their count and by name above.
var lockerLived = []string{"redlock.(*redisNode).send(", "pool.(*ConnPool).tryDial("}

// countGoroutines is runtime.NumGoroutine without the locker-lived ones.
func countGoroutines() int {
	n := 0
	for _, g := range strings.Split(allStacks(), "\n\n") {
		if !strings.HasPrefix(g, "goroutine ") {
			continue
		}
		lived := false
		for _, f := range lockerLived {
			lived = lived || strings.Contains(g, f)
		}
		if !lived {
			n++
		}
	}
	return n
}

func allStacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// settledGoroutines polls runtime.NumGoroutine until it is at most want
// (or stable when want is 0) or the time is up, and returns the last count.
func settledGoroutines(want int, within time.Duration) int {
	deadline := time.Now().Add(within)
	n := countGoroutines()
	for time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		m := countGoroutines()
		if (want > 0 && m <= want) || (want == 0 && m == n) {
			return m
		}
		n = m
	}
	return n
}
