package scheduler_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler"
)

// A single replica with the in-process locker runs a job every second.
// With redlock.New over shared Redis nodes instead, any number of
// replicas run the same configuration and each slot still runs once.
func Example() {
	lk := locking.NewLocal(locking.Options{Replica: "replica-a"})
	defer lk.Close()

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	heartbeat := jobs.Func(func(ctx context.Context, run jobs.Run) error {
		// run.Slot is the slot's nominal time; run.FencingToken orders this
		// run after every earlier run of the job, on any replica.
		fmt.Printf("%s: attempt %d on %s\n", run.Job, run.Attempt, run.Replica)
		stop() // one run is enough here: Run shuts down once it returns
		return nil
	})

	s, err := scheduler.New(scheduler.Config{
		Replica: "replica-a",
		Locker:  lk,
		Logger:  slog.New(slog.DiscardHandler), // the audit events: run.started, run.succeeded, ...
		// New parses Spec (in UTC: Location is nil); the zero values of
		// the rest are the defaults: enabled, overlap forbid, misfire skip.
		Jobs: []scheduler.JobSpec{{
			Name:    "heartbeat",
			Spec:    "@every 1s",
			Job:     heartbeat,
			Timeout: 5 * time.Second,
		}},
	})
	if err != nil {
		log.Fatal(err)
	}
	// Run fires slots until ctx ends, then lets running runs finish
	// (ShutdownGrace), ends their leases and returns.
	if err := s.Run(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("stopped")
	// Output:
	// heartbeat: attempt 1 on replica-a
	// stopped
}
