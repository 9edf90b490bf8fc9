package ops_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/ops"
	"github.com/slotlock/slotlock/scheduler"
)

// A service runs a function of its own every minute, exactly once across
// its replicas (redlock.New over shared Redis nodes; in-process
// locks here, for one replica), and mounts the probes, the metrics and the
// status page on its own mux. examples/embed is the whole service.
func ExampleHandler() {
	lk := locking.NewLocal(locking.Options{Replica: "svc-1"}) // the replica's name, given once
	defer lk.Close()
	sync := jobs.Func(func(ctx context.Context, run jobs.Run) error {
		fmt.Println("syncing slot", run.SlotString())
		return nil
	})
	s, err := scheduler.New(scheduler.Config{
		Locker:  lk,
		Metrics: ops.NewMetrics(),
		Jobs:    []scheduler.JobSpec{{Name: "sync", Spec: "@every 1m", Job: sync, Timeout: 30 * time.Second}},
	})
	if err != nil {
		log.Fatal(err)
	}

	mux := http.NewServeMux()
	mux.Handle("/ops/", http.StripPrefix("/ops", ops.Handler(s, ops.Options{StatusPage: true}))) // /ops/healthz, /ops/readyz, /ops/metrics, /ops/
	go func() { log.Fatal(http.ListenAndServe("127.0.0.1:8080", mux)) }()

	ctx := context.Background() // the service's: cancel it to shut down
	if err := s.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
