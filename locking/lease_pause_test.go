package locking

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// A process paused after Acquire and before its watchdog armed its first
// timer (found by the e2e soak: a run started 0.3 ms before a SIGSTOP went
// on for 0.4 s after waking, its lease long gone): Keep must cancel at once
// when the lease is already past ValidUntil, not TTL/3 later.
func TestKeepAfterPauseLosesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		clock := &jumpClock{}
		l := NewLocal(Options{Replica: "a", Clock: clock})
		ttl := 300 * time.Millisecond
		lease, err := l.Acquire(ctx, Key{Family: "job", Name: "run"}, ttl)
		if err != nil {
			t.Fatal(err)
		}
		clock.offset.Store(int64(2 * ttl)) // "slept" through the lease before Keep
		kctx := lease.Keep(ctx)
		synctest.Wait() // the watchdog has run; no fake time has passed
		if !errors.Is(context.Cause(kctx), ErrLockLost) {
			t.Fatalf("kept context after a pause past ValidUntil: cause %v, want ErrLockLost at once", context.Cause(kctx))
		}
		lease.End(ctx, Ending{})
	})
}

// A lease kept late, with less than TTL/3 of its validity left, is renewed
// before it expires — not declared lost at the first tick, which used to
// land on ValidUntil itself, without a single Extend.
func TestKeepLateStillRenews(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		l := NewLocal(Options{Replica: "a"})
		ttl := 300 * time.Millisecond
		lease, err := l.Acquire(ctx, Key{Family: "job", Name: "run"}, ttl)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(ttl - drift(ttl) - 20*time.Millisecond) // 20ms of validity left
		kctx := lease.Keep(ctx)
		time.Sleep(3 * ttl)
		if err := context.Cause(kctx); err != nil {
			t.Fatalf("lease kept with 20ms left was lost without a renewal: %v", err)
		}
		if err := lease.End(ctx, Ending{}).Err; err != nil {
			t.Fatal(err)
		}
	})
}

// A process paused between a claim's grant and the start of its work
// (found by the simulation, seed 127942: a replica frozen 55 s there
// started the job on a claim another replica had taken over and reported
// as one that may have started): Start refuses a lease past ValidUntil,
// marks it lost, and declares nothing; a valid claim is declared started.
func TestStartAfterPauseRefuses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		clock := &jumpClock{}
		l := NewLocal(Options{Replica: "a", Clock: clock})
		ttl := 300 * time.Millisecond
		fresh, err := l.Claim(ctx, Key{Family: "job", Name: "slot-1"}, ttl)
		if err != nil {
			t.Fatal(err)
		}
		if err := fresh.Start(); err != nil {
			t.Fatalf("Start of a valid claim: %v", err)
		}
		paused, err := l.Claim(ctx, Key{Family: "job", Name: "slot-2"}, ttl)
		if err != nil {
			t.Fatal(err)
		}
		clock.offset.Store(int64(2 * ttl)) // "slept" through the lease before the work
		if err := paused.Start(); !errors.Is(err, ErrLockLost) {
			t.Fatalf("Start after a pause past ValidUntil = %v, want ErrLockLost", err)
		}
		select {
		case <-paused.Lost():
		default:
			t.Fatal("a lease Start refused is not marked lost")
		}
		paused.mu.Lock()
		started := paused.started
		paused.mu.Unlock()
		if started {
			t.Fatal("a claim Start refused was declared started: its renewals would confirm work that never began")
		}
		fresh.End(ctx, Ending{})
		paused.End(ctx, Ending{})
	})
}
