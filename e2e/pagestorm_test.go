package e2e

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
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
// API with week windows, in the same run. The clients come from as many
// loopback addresses and ask again as soon as they are answered, or once
// the Retry-After of a 429 (rate) or a 503 (busy) is over, as browsers
// and polite scripts do; the log counts each answer. The storm must keep
// the start delay's p99 within 1.1x of the quiet window's and add no
// no_quorum or late slot. Run it alone: flock /tmp/slotlock-heavy.lock go
// test ./e2e -run TestPageStorm -pagestorm -v.
func TestPageStorm(t *testing.T) {
	if !*stormFlag {
		t.Skip("pagestorm: set -pagestorm to run the benchmark")
	}
	requireSuite(t)
	t.Log(HostLine())
	p := ScalePoint{Jobs: *stormJobs, Replicas: 3, Nodes: 3, Overlap: "forbid"}
	warmup, seconds := time.Duration(*scaleWarmup)*time.Second, *scaleSeconds
	quiet := runScalePoint(t, p, warmup, seconds, func(*Cluster, <-chan struct{}) {})
	var n stormCounts
	storm := runScalePoint(t, p, warmup, seconds, func(c *Cluster, stop <-chan struct{}) {
		base := "http://" + c.Replica("r1").HTTPAddr
		var wg sync.WaitGroup
		for i := range *stormClients {
			wg.Go(func() { stormClient(stormHTTP(i), base, i, stop, &n) })
		}
		wg.Wait()
	})
	t.Logf("\n%s\n%s\n%s", ScaleHeader, quiet.Row(), storm.Row())
	q99, s99 := quiet.Tally.Percentile(99), storm.Tally.Percentile(99)
	t.Logf("page storm: %d clients, %d requests: %d served, %d answered 429 too many, %d answered 503 busy, %d failed; "+
		"start delay p99 %.1f ms quiet, %.1f ms in the storm (%.2fx); no_quorum %d -> %d, late %d -> %d",
		*stormClients, n.served.Load()+n.tooMany.Load()+n.busy.Load()+n.failed.Load(), n.served.Load(), n.tooMany.Load(),
		n.busy.Load(), n.failed.Load(), q99, s99, s99/max(q99, 0.001),
		quiet.Tally.NotRun["no_quorum"], storm.Tally.NotRun["no_quorum"], quiet.Tally.NotRun["late"], storm.Tally.NotRun["late"])
	if s99 > 1.1*q99 {
		t.Errorf("page storm: start delay p99 %.1f ms > 1.1 x the quiet window's %.1f ms", s99, q99)
	}
	for _, r := range []string{"no_quorum", "late"} {
		if storm.Tally.NotRun[r] > quiet.Tally.NotRun[r] {
			t.Errorf("page storm: %d %s slots, %d without it", storm.Tally.NotRun[r], r, quiet.Tally.NotRun[r])
		}
	}
	if n.served.Load() == 0 {
		t.Error("page storm: no page was served: the storm did not reach the page")
	}
}

// stormCounts are the storm's answers by kind.
type stormCounts struct{ served, tooMany, busy, failed atomic.Int64 }

// stormClient loads week windows of the page and of the slots API, one
// job after another, as fast as it is answered, until stop; as a browser
// or a well-behaved script does, it waits the Retry-After of a 429 or a
// 503 (at most until stop) before asking again.
func stormClient(client *http.Client, base string, i int, stop <-chan struct{}, n *stormCounts) {
	defer client.CloseIdleConnections()
	for k := 0; ; k++ {
		select {
		case <-stop:
			return
		default:
		}
		job := fmt.Sprintf("s%05d", (i*7+k)%*stormJobs)
		url := base + "/?job=" + job + "&since=168h"
		if k%2 == 1 {
			url = base + "/api/v1/jobs/" + job + "/slots?since=168h"
		}
		resp, err := client.Get(url)
		if err != nil {
			n.failed.Add(1)
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			n.served.Add(1)
			continue
		case http.StatusTooManyRequests:
			n.tooMany.Add(1)
		case http.StatusServiceUnavailable:
			n.busy.Add(1)
		default:
			n.failed.Add(1)
			continue
		}
		secs, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		if err != nil || secs < 1 {
			secs = 1 // a refusal without a usable Retry-After: a browser's reload pace
		}
		select {
		case <-stop:
			return
		case <-time.After(time.Duration(secs) * time.Second):
		}
	}
}

// stormHTTP is client i's HTTP client: from its own loopback address,
// 127.0.0.(i+2), so the clients are as many addresses to the page's
// per-client limit, as people or scripts on as many hosts would be, and
// only the bound on all clients together holds them.
func stormHTTP(i int) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, byte((i+2)>>8), byte(i+2))}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
}
