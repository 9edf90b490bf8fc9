package locking_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// One slot of a job, start to end, on the in-process locker: claim the
// slot, keep the lease while the work runs, then turn it into a done
// marker so that nobody runs the slot again.
func ExampleNewLocal() {
	lk := locking.NewLocal(locking.Options{Replica: "replica-a"})
	defer lk.Close()
	ctx := context.Background()
	slot := locking.Key{Family: "nightly-report", Name: "slot:1795860000"}

	lease, err := lk.Claim(ctx, slot, 30*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("claimed", lease.Grant().Key, "fencing token", lease.Token())

	// While the lease is held, nobody else gets the key.
	_, err = lk.Claim(ctx, slot, 30*time.Second)
	fmt.Println(errors.Is(err, locking.ErrNotAcquired), err)

	// Keep renews the lease every TTL/3 until it is ended; the context it
	// returns is canceled with cause ErrLockLost if a renewal fails for
	// good. Run the work under it.
	work := lease.Keep(ctx)
	if err := work.Err(); err != nil {
		log.Fatal(context.Cause(work))
	}

	// The work is over: the claim becomes a done marker for one minute.
	// End stops the watchdog first, and ends work's context.
	if err := lease.End(ctx, locking.Ending{DoneTTL: time.Minute, Note: "succeeded"}).Err; err != nil {
		log.Fatal(err)
	}
	_, err = lk.Claim(ctx, slot, 30*time.Second)
	var held *locking.HeldError
	if errors.As(err, &held) {
		fmt.Println("done:", held.Done, "note:", held.Note, "by:", held.Holder)
	}

	// The next slot of the same job gets a larger fencing token.
	next, err := lk.Claim(ctx, locking.Key{Family: "nightly-report", Name: "slot:1795946400"}, 30*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("next slot's token", next.Token())
	next.End(ctx, locking.Ending{})
	// Output:
	// claimed nightly-report:slot:1795860000 fencing token 1
	// true locking: nightly-report:slot:1795860000 not acquired: held by replica-a
	// done: true note: succeeded by: replica-a
	// next slot's token 2
}

// Redlock over three independent Redis nodes. NewRedlock connects lazily:
// nodes down now are tried again on every operation, so it fails only on a
// configuration error. Every operation then needs a majority (2 of 3).
func ExampleNewRedlock() {
	lk, err := locking.NewRedlock(locking.RedisConfig{
		Nodes:     []string{"redis-a:6379", "redis-b:6379", "redis-c:6379"},
		KeyPrefix: "slotlock",
		OpTimeout: 100 * time.Millisecond, // per node and round: a dead node costs this, never a TTL
	}, locking.Options{Replica: "replica-a"})
	if err != nil {
		log.Fatal(err)
	}
	defer lk.Close()

	ctx := context.Background()
	lease, err := lk.Acquire(ctx, locking.Key{Family: "nightly-report", Name: "run"}, 30*time.Second)
	var quorum *locking.QuorumError
	switch {
	case errors.As(err, &quorum):
		log.Fatalf("%d of %d nodes answered: %v", quorum.Got, quorum.Need, err)
	case errors.Is(err, locking.ErrNotAcquired):
		return // held by another replica (err names it), or already done
	case err != nil:
		log.Fatal(err)
	}
	defer lease.End(ctx, locking.Ending{})

	// Pass the fencing token to whatever the work writes to, so a stale
	// holder (a process paused past its lease) can be refused.
	work := lease.Keep(ctx)
	_ = work // do the work under work; errors.Is(context.Cause(work), locking.ErrLockLost) when the lease is lost
	fmt.Println("token", lease.Token())
}
