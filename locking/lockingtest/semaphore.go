package lockingtest

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// Cases on semaphores (locking.Semaphore): at most Limit permits held at
// once, also under contention; a permit ended or expired is free again.

func testSemaphore(t *testing.T, l locking.Locker) {
	s := locking.Semaphore{Name: family(t), Limit: 2}
	a, err := s.Acquire(ctx(t), l, 5*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	// From permit 0 again: the one taken is skipped, the next given.
	b, err := s.Acquire(ctx(t), l, 300*time.Millisecond, 0)
	if err != nil {
		t.Fatal(err)
	}
	if a.Grant().Key == b.Grant().Key {
		t.Fatalf("two permits on one key %s", a.Grant().Key)
	}
	if g, ok := locking.IsPermit(b.Grant().Key); !ok || g != s.Name {
		t.Fatalf("IsPermit(%s) = %q, %v", b.Grant().Key, g, ok)
	}
	_, err = s.Acquire(ctx(t), l, time.Second, 1)
	if !locking.IsHeld(err) {
		t.Fatalf("a third permit of 2: %v, want held", err)
	}
	wantHeld(t, err, false)
	// A holder that never ends its permit (it crashed) frees it at its TTL.
	time.Sleep(400 * time.Millisecond)
	c, err := s.Acquire(ctx(t), l, time.Second, 0)
	if err != nil {
		t.Fatalf("after the TTL of a permit: %v", err)
	}
	if c.Grant().Key != b.Grant().Key {
		t.Fatalf("got %s, want the expired %s", c.Grant().Key, b.Grant().Key)
	}
	// An ended permit is free at once.
	if err := a.End(ctx(t), locking.Ending{}).Err; err != nil {
		t.Fatal(err)
	}
	d, err := s.Acquire(ctx(t), l, time.Second, 5)
	if err != nil {
		t.Fatalf("after an End: %v", err)
	}
	for _, p := range []*locking.Lease{c, d} {
		if err := p.End(ctx(t), locking.Ending{}).Err; err != nil {
			t.Fatal(err)
		}
	}
	if _, err := (locking.Semaphore{Name: s.Name}).Acquire(ctx(t), l, time.Second, 0); err == nil || locking.IsHeld(err) {
		t.Fatalf("limit 0: %v, want an error of its own", err)
	}
}

// testSemaphoreContended: 8 callers take and end permits of a semaphore
// of 3 as fast as they can; never more than 3 are held at once.
func testSemaphoreContended(t *testing.T, l locking.Locker) {
	s := locking.Semaphore{Name: family(t), Limit: 3}
	var inside, most, wins atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	stop := time.Now().Add(3 * time.Second)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) && wins.Load() < 40 {
				p, err := s.Acquire(ctx(t), l, 5*time.Second, g)
				if err != nil {
					if locking.IsHeld(err) || errors.Is(err, locking.ErrSplitVote) {
						time.Sleep(time.Millisecond)
						continue
					}
					errs <- err
					return
				}
				n := inside.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(2 * time.Millisecond)
				inside.Add(-1)
				wins.Add(1)
				if err := p.End(ctx(t), locking.Ending{}).Err; err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if most.Load() > int32(s.Limit) {
		t.Fatalf("%d permits held at once, limit %d", most.Load(), s.Limit)
	}
	if wins.Load() == 0 {
		t.Fatal("no permit was ever taken")
	}
}
