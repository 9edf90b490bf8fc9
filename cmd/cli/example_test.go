package cli_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/slotlock/slotlock/cmd/cli"
	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler"
)

// A service runs a function of its own every minute, exactly once across
// its replicas (redlock.New over shared Redis nodes; in-process
// locks here, for one replica), and mounts the probes, the metrics and the
// status page on its own mux. examples/embed is the whole service.
func ExampleNewOps() {
	lk := locking.NewLocal(locking.Options{Replica: "svc-1"})
	defer lk.Close()
	every, err := scheduler.ParseSchedule("@every 1m", time.UTC)
	if err != nil {
		log.Fatal(err)
	}
	sync := jobs.Func(func(ctx context.Context, run jobs.Run) error {
		fmt.Println("syncing slot", run.SlotString())
		return nil
	})
	s, ops, err := cli.NewOps(scheduler.Config{
		Replica: "svc-1",
		Locker:  lk,
		Jobs: []scheduler.JobSpec{{Name: "sync", Spec: "@every 1m", Schedule: every, Job: sync,
			Timeout: 30 * time.Second}},
	}, cli.OpsOptions{StatusPage: true})
	if err != nil {
		log.Fatal(err)
	}
	_ = s // Trigger, Reload, Next: the scheduler's own calls

	mux := http.NewServeMux()
	mux.Handle("/ops/", http.StripPrefix("/ops", ops)) // /ops/healthz, /ops/readyz, /ops/metrics, /ops/
	go func() { log.Fatal(http.ListenAndServe("127.0.0.1:8080", mux)) }()

	ctx := context.Background() // the service's: cancel it to shut down
	if err := ops.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
