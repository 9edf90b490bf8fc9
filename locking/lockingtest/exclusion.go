package lockingtest

import (
	"errors"
	mrand "math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// Cases on mutual exclusion: one holder per key, also under contention.

func testExclusiveHold(t *testing.T, l locking.Locker) {
	key := locking.Key{Family: family(t), Name: "k"}
	lease := mustAcquire(t, l, key, 5*time.Second)
	if lease.Grant().Key != key {
		t.Fatalf("Key() = %v", lease.Grant().Key)
	}
	if lease.Token() == 0 {
		t.Fatal("token 0")
	}
	if !time.Now().Before(lease.ValidUntil()) || lease.ValidUntil().After(time.Now().Add(5*time.Second)) {
		t.Fatalf("ValidUntil %v not within the TTL", lease.ValidUntil())
	}
	_, err := l.Acquire(ctx(t), key, 5*time.Second)
	held := wantHeld(t, err, false)
	if held.Holder != lease.Grant().Holder || held.Key != key {
		t.Fatalf("HeldError %+v, want holder %q", held, lease.Grant().Holder)
	}
	// Another key is free.
	other := mustAcquire(t, l, locking.Key{Family: key.Family, Name: "other"}, time.Second)
	if err := other.End(ctx(t), locking.Ending{}).Err; err != nil {
		t.Fatal(err)
	}
	if err := lease.End(ctx(t), locking.Ending{}).Err; err != nil {
		t.Fatal(err)
	}
	again := mustAcquire(t, l, key, time.Second)
	if err := again.End(ctx(t), locking.Ending{}).Err; err != nil {
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
				if err := lease.End(ctx(t), locking.Ending{}).Err; err != nil {
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
