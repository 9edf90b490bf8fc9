package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redlock"
)

// Redlock over three independent Redis nodes. redlock.New connects lazily:
// nodes down now are tried again on every operation, so it fails only on a
// configuration error. Every operation then needs a majority (2 of 3).
func ExampleNew() {
	lk, err := redlock.New(redlock.Config{
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
