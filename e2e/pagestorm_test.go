package e2e

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var (
	stormFlag    = flag.Bool("pagestorm", false, "run the status page storm benchmark (TestPageStorm)")
	stormJobs    = flag.Int("pagestorm.jobs", 300, "pagestorm: every-second log jobs")
	stormClients = flag.Int("pagestorm.clients", 8, "pagestorm: clients loading week windows of the page and the slots API on one replica")
)

// TestPageStorm measures what a storm of status page loads does to the
// locks: the same scale point (3 replicas x 3 nodes, every-second jobs)
// once quiet and once with clients hammering replica r1's page and slots
// API with week windows, in the same run. The storm must keep the start
// delay's p99 within 1.1x of the quiet window's and add no no_quorum or
// late slot. Run it alone: flock /tmp/slotlock-heavy.lock go test ./e2e
// -run TestPageStorm -pagestorm -v.
func TestPageStorm(t *testing.T) {
	if !*stormFlag {
		t.Skip("pagestorm: set -pagestorm to run the benchmark")
	}
	requireSuite(t)
	t.Log(HostLine())
	p := ScalePoint{Jobs: *stormJobs, Replicas: 3, Nodes: 3, Overlap: "forbid"}
	warmup, seconds := time.Duration(*scaleWarmup)*time.Second, *scaleSeconds
	quiet := runScalePoint(t, p, warmup, seconds, func(*Cluster, <-chan struct{}) {})
	var served, busy, failed atomic.Int64
	storm := runScalePoint(t, p, warmup, seconds, func(c *Cluster, stop <-chan struct{}) {
		base := "http://" + c.Replica("r1").HTTPAddr
		client := &http.Client{Timeout: 30 * time.Second}
		var wg sync.WaitGroup
		for i := range *stormClients {
			wg.Go(func() {
				for n := 0; ; n++ {
					select {
					case <-stop:
						return
					default:
					}
					job := fmt.Sprintf("s%05d", (i*7+n)%*stormJobs)
					url := base + "/?job=" + job + "&since=168h"
					if n%2 == 1 {
						url = base + "/api/v1/jobs/" + job + "/slots?since=168h"
					}
					resp, err := client.Get(url)
					if err != nil {
						failed.Add(1)
						continue
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					switch resp.StatusCode {
					case http.StatusOK:
						served.Add(1)
					case http.StatusServiceUnavailable:
						busy.Add(1)
					default:
						failed.Add(1)
					}
				}
			})
		}
		wg.Wait()
	})
	t.Logf("\n%s\n%s\n%s", ScaleHeader, quiet.Row(), storm.Row())
	q99, s99 := quiet.Tally.Percentile(99), storm.Tally.Percentile(99)
	t.Logf("page storm: %d pages served, %d answered 503 busy, %d failed; start delay p99 %.1f ms quiet, %.1f ms in the storm (%.2fx); no_quorum %d -> %d, late %d -> %d",
		served.Load(), busy.Load(), failed.Load(), q99, s99, s99/max(q99, 0.001),
		quiet.Tally.NotRun["no_quorum"], storm.Tally.NotRun["no_quorum"], quiet.Tally.NotRun["late"], storm.Tally.NotRun["late"])
	if s99 > 1.1*q99 {
		t.Errorf("page storm: start delay p99 %.1f ms > 1.1 x the quiet window's %.1f ms", s99, q99)
	}
	for _, r := range []string{"no_quorum", "late"} {
		if storm.Tally.NotRun[r] > quiet.Tally.NotRun[r] {
			t.Errorf("page storm: %d %s slots, %d without it", storm.Tally.NotRun[r], r, quiet.Tally.NotRun[r])
		}
	}
	if served.Load() == 0 {
		t.Error("page storm: no page was served: the storm did not reach the page")
	}
}
