package locking_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// One slot of a job, start to end: claim the slot, check what the claim
// found, do the work under the kept lease, then turn the claim into a done
// marker so that nobody runs the slot again.
func ExampleLocker_Claim() {
	lk := locking.NewLocal(locking.Options{Replica: "replica-a"})
	defer lk.Close()
	ctx := context.Background()
	slot := locking.Key{Family: "nightly-report", Name: "slot:1795860000"}

	lease, err := lk.Claim(ctx, slot, 30*time.Second)
	if err != nil {
		log.Fatal(err) // held, done, paused or no majority: not this replica's slot now
	}
	g := lease.Grant()
	if g.Abandoned != nil || g.Leftover {
		// A holder died with it, or a store kept an old claim: report it,
		// never run it.
		lease.End(ctx, locking.Ending{DoneTTL: time.Hour, Note: "abandoned"})
		return
	}
	fmt.Println("claimed", g.Key, "with a fencing token:", lease.Token() > 0)

	// While the lease is held, nobody else gets the slot.
	_, err = lk.Claim(ctx, slot, 30*time.Second)
	fmt.Println(errors.Is(err, locking.ErrNotAcquired), err)

	work := lease.Keep(ctx)
	if err := lease.Start(); err != nil {
		log.Fatal(err) // ErrLockLost: paused past the lease since the claim: the work must not start
	}
	_ = work // run the job under work, with lease.Token()

	// The work is over: the claim becomes a done marker for an hour.
	res := lease.End(ctx, locking.Ending{DoneTTL: time.Hour, Note: "succeeded"})
	if res.Err != nil {
		log.Fatal(res.Err)
	}
	_, err = lk.Claim(ctx, slot, 30*time.Second)
	var held *locking.HeldError
	if errors.As(err, &held) {
		fmt.Println("done:", held.Done, "note:", held.Note, "by:", held.Holder)
	}

	// The next slot of the same job gets a larger fencing token, and can
	// take the job's own lease in the same step (no two runs at once).
	next, err := lk.Claim(ctx, locking.Key{Family: "nightly-report", Name: "slot:1795946400"}, 30*time.Second,
		locking.With(locking.Key{Family: "nightly-report", Name: "run"}))
	if err != nil {
		log.Fatal(err)
	}
	job := next.Grant().Joined
	fmt.Println("next slot's token is larger:", next.Token() > lease.Token(), "job lease", job.Grant().Key,
		"same token:", job.Token() == next.Token())
	next.End(ctx, locking.Ending{Also: job})
	// Output:
	// claimed nightly-report:slot:1795860000 with a fencing token: true
	// true locking: nightly-report:slot:1795860000 not acquired: held by replica-a
	// done: true note: succeeded by: replica-a
	// next slot's token is larger: true job lease nightly-report:run same token: true
}

// Keep starts the watchdog that renews the lease every TTL/3 and returns
// a context for the work: canceled with cause ErrLockLost when the lease
// could not be renewed on a majority in time, and canceled when the lease
// is ended. Lost closes on a loss too, for a caller that selects.
func ExampleLease_Keep() {
	lk := locking.NewLocal(locking.Options{Replica: "replica-a"})
	defer lk.Close()
	ctx := context.Background()

	lease, err := lk.Acquire(ctx, locking.Key{Family: "billing", Name: "run"}, 10*time.Second)
	if err != nil {
		log.Fatal(err)
	}
	work := lease.Keep(ctx)
	done := make(chan error, 1)
	go func() {
		// The work: pass lease.Token() to what it writes, and stop when
		// work is canceled.
		done <- work.Err()
	}()
	select {
	case err := <-done:
		fmt.Println("work finished:", err)
	case <-lease.Lost():
		fmt.Println("lease lost:", context.Cause(work)) // errors.Is(…, locking.ErrLockLost)
	}
	lease.End(ctx, locking.Ending{})
	fmt.Println("after End:", work.Err())
	// Output:
	// work finished: <nil>
	// after End: context canceled
}

// The fleet's state beside the locks: a pause that Claim honours, and a
// record that only rises.
func ExampleStore() {
	b := locking.NewLocal(locking.Options{Replica: "replica-a"})
	defer b.Close()
	ctx := context.Background()

	if _, err := b.SetPause(ctx, "nightly-report", locking.Pause{Paused: true, By: "ops", Reason: "migration"}); err != nil {
		log.Fatal(err)
	}
	_, err := b.Claim(ctx, locking.Key{Family: "nightly-report", Name: "slot:1"}, 30*time.Second)
	fmt.Println(errors.Is(err, locking.ErrPaused))

	last := locking.Key{Family: "nightly-report", Name: "last"}
	_ = b.AdvanceRecord(ctx, last, 1795860000)
	_ = b.AdvanceRecord(ctx, last, 1795000000) // lower: kept as it was
	v, _ := b.ReadRecord(ctx, last)
	fmt.Println(v)
	// Output:
	// true
	// 1795860000
}
