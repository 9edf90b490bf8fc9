// Command embed is a Go service that runs one of its own functions on a
// schedule, exactly once per slot however many replicas of the service run,
// in its own process: no slotlock binary, no configuration file, no plugin.
//
// Start three independent Redis servers and any number of replicas:
//
//	go run ./examples/embed -redis 127.0.0.1:6379,127.0.0.1:6380,127.0.0.1:6381 -addr 127.0.0.1:8080
//	go run ./examples/embed -redis 127.0.0.1:6379,127.0.0.1:6380,127.0.0.1:6381 -addr 127.0.0.1:8081
//
// Each second one replica prints "report <slot> token <n>". The service's
// own mux serves its API (POST /report runs the job now, under the same
// locks) and, under /ops/, the probes, the metrics and the status page.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redlock"
	"github.com/slotlock/slotlock/ops"
	"github.com/slotlock/slotlock/scheduler"
)

func main() {
	redis := flag.String("redis", "", "comma-separated addresses of independent Redis servers (required)")
	addr := flag.String("addr", "127.0.0.1:8080", "the service's HTTP address")
	replica := flag.String("replica", "", "this replica's name in logs and locks (default: the host name and the address)")
	flag.Parse()
	if *redis == "" {
		log.Fatal("-redis is required")
	}
	name := *replica
	if name == "" {
		host, _ := os.Hostname()
		name = host + "/" + *addr
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, service{replica: name, nodes: strings.Split(*redis, ","), ln: ln, out: os.Stdout}); err != nil {
		log.Fatal(err)
	}
}

// service is what one replica of the service is given.
type service struct {
	replica string
	nodes   []string     // independent Redis servers
	ln      net.Listener // where the service's HTTP API listens
	out     io.Writer    // where the job reports
}

// serve runs one replica until ctx ends: the scheduled job, the service's
// API and the ops endpoints.
func serve(ctx context.Context, svc service) error {
	// The replica's name is given once, here: the scheduler takes the
	// locker's, and its audit events (run.started, run.succeeded,
	// slot.skipped, ...) go to stderr as JSON lines carrying it.
	lk, err := redlock.New(redlock.Config{Nodes: svc.nodes}, locking.Options{Replica: svc.replica})
	if err != nil {
		return err
	}
	defer lk.Close()

	// The job is a plain function of the service. run.FencingToken grows
	// with every run of the job on any replica: hand it to what you write
	// to, so a stale run's write can be refused (package fence).
	report := jobs.Func(func(ctx context.Context, run jobs.Run) error {
		_, err := fmt.Fprintf(svc.out, "report %s token %d\n", run.SlotString(), run.FencingToken)
		return err
	})
	s, err := scheduler.New(scheduler.Config{
		Locker:  lk,
		Metrics: ops.NewMetrics(), // served by ops.Handler at /metrics
		Jobs: []scheduler.JobSpec{{
			Name: "report", Spec: "@every 1s", Job: report, Timeout: 30 * time.Second,
		}},
	})
	if err != nil {
		return err
	}

	mux := http.NewServeMux()
	mux.HandleFunc("POST /report", func(w http.ResponseWriter, r *http.Request) {
		// Trigger runs the job now as a manual slot, under the job's lease:
		// it never overlaps a scheduled run on any replica.
		if err := s.Trigger(r.Context(), "report"); err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		fmt.Fprintln(w, "reported")
	})
	// /ops/healthz, /ops/readyz, /ops/metrics and the status page at /ops/.
	mux.Handle("/ops/", http.StripPrefix("/ops", ops.Handler(s, ops.Options{StatusPage: true})))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(svc.ln) }()

	// Run fires the slots until ctx ends, then lets a running run finish
	// (Config.ShutdownGrace) and ends its lease.
	err = s.Run(ctx)
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if serr := srv.Shutdown(shutdown); serr != nil {
		err = errors.Join(err, serr)
	}
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
