package locking

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// A process that Options.Fit declares unfit takes no lease and renews
// none: the lease it holds lapses at its validity (its kept context
// canceled with ErrLockLost) and the key is free for another holder.
// Ending a lease stays allowed.
func TestUnfitProcessLetsItsLeasesLapse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		var unfit atomic.Bool
		blocked := errors.New("log output blocked")
		l := NewLocal(Options{Replica: "a", Fit: func() error {
			if unfit.Load() {
				return blocked
			}
			return nil
		}})
		ttl := 300 * time.Millisecond
		key := Key{Family: "job", Name: "run"}
		lease, err := l.Acquire(ctx, key, ttl)
		if err != nil {
			t.Fatal(err)
		}
		kctx := lease.Keep(ctx)
		time.Sleep(2 * ttl)
		if err := context.Cause(kctx); err != nil {
			t.Fatalf("a fit process's lease was not renewed: %v", err)
		}

		unfit.Store(true)
		if _, err := l.Acquire(ctx, Key{Family: "job", Name: "other"}, ttl); !errors.Is(err, ErrUnfit) || !errors.Is(err, blocked) {
			t.Fatalf("Acquire while unfit: %v, want ErrUnfit wrapping Fit's error", err)
		}
		if err := lease.Extend(ctx); !errors.Is(err, ErrUnfit) {
			t.Fatalf("Extend while unfit: %v, want ErrUnfit", err)
		}
		lapse := lease.ValidUntil()
		time.Sleep(ttl)
		synctest.Wait()
		if !errors.Is(context.Cause(kctx), ErrLockLost) {
			t.Fatalf("an unfit process's lease a TTL later: cause %v, want ErrLockLost", context.Cause(kctx))
		}
		if !lease.ValidUntil().Equal(lapse) {
			t.Fatalf("an unfit process's lease was renewed: valid until %v, was %v", lease.ValidUntil(), lapse)
		}
		lease.End(ctx, Ending{})

		unfit.Store(false)
		again, err := l.Acquire(ctx, key, ttl)
		if err != nil {
			t.Fatalf("the lapsed key is not free once fit again: %v", err)
		}
		if again.Token() <= lease.Token() {
			t.Fatalf("token %d after the lapse, want above %d", again.Token(), lease.Token())
		}
		again.End(ctx, Ending{})
	})
}
