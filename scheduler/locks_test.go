package scheduler

import (
	"context"
	"errors"
	"github.com/slotlock/slotlock/scheduler/history"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// fakeAdmit admits every call and records the signals it is given;
// down is what the fake outage says of the stores.
type fakeAdmit struct {
	mu      sync.Mutex
	calls   int
	signals []admitSignal
	down    bool
}

func (f *fakeAdmit) admitCall(deadline time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return nil
}

func (f *fakeAdmit) admitDone(d time.Duration, sig admitSignal) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.signals = append(f.signals, sig)
}

func (f *fakeAdmit) isDown() bool { return f.down }

// TestLocksAlone: the lease taking built over a fake admission and outage.
// A scheduled claim's first call goes under its ticket, a later one asks
// admission; each answer is reported;
// a key held by another lease is asked again until the policy's held
// bound, then refused; a call made after its staleness bound is not sent.
func TestLocksAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newEnv(t)
		ctx := context.Background()
		f := &fakeAdmit{}
		lk := newLocks(testEngine(t, Config{Replica: "r1", Locker: env.locker}), f, f)
		now := time.Now()
		key := locking.Key{Family: "tick", Name: "k"}
		if _, err := lk.acquire("tick", key, retryPolicy{claim: true, splitUntil: now.Add(time.Second),
			staleAfter: now.Add(time.Second), ticket: &ticket{}}); err != nil {
			t.Fatal(err)
		}
		if f.calls != 0 || len(f.signals) != 1 || f.signals[0] != admitAnswered {
			t.Errorf("admission asked %d times, told %v: want the ticket's call, answered", f.calls, f.signals)
		}
		used := &ticket{used: true}
		if _, err := lk.acquire("tick", locking.Key{Family: "tick", Name: "k2"}, retryPolicy{claim: true,
			splitUntil: now.Add(time.Second), staleAfter: time.Now().Add(time.Second), ticket: used}); err != nil {
			t.Fatal(err)
		}
		if f.calls != 1 || len(f.signals) != 2 {
			t.Errorf("admission asked %d times, told %v: a call without its ticket asks once", f.calls, f.signals)
		}

		run := history.RunKey("tick")
		if _, err := env.locker.Acquire(ctx, run, time.Minute); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		const heldFor = 300 * time.Millisecond
		_, err := lk.acquire("tick", run, retryPolicy{heldUntil: start.Add(heldFor)})
		var he *locking.HeldError
		// Asked again until the next wait (at most heldBackoffMax and half
		// of it in jitter) would start past the bound, and never after it.
		took := time.Since(start)
		if !errors.As(err, &he) || took < heldFor-heldBackoffMax*3/2 || took >= heldFor {
			t.Errorf("held key: %v after %v, want a HeldError once the next try would start past %v", err, took, heldFor)
		}

		_, err = lk.acquire("tick", locking.Key{Family: "tick", Name: "late"}, retryPolicy{claim: true,
			staleAfter: time.Now().Add(-time.Second), ticket: &ticket{}})
		if !errors.Is(err, errStale) {
			t.Errorf("a call past its staleness bound: %v, want errStale", err)
		}
	})
}
