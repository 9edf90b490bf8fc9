//go:build linux

package e2e

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	scaleFlag     = flag.Bool("scale", false, "run the scale benchmark (TestScale)")
	scaleJobs     = flag.String("scale.jobs", "100,1000,5000", "scale: numbers of every-second log jobs, comma-separated")
	scaleSeconds  = flag.Int("scale.seconds", 20, "scale: measured window per point, seconds")
	scaleWarmup   = flag.Int("scale.warmup", 5, "scale: seconds after the replicas started before the window opens")
	scaleReplicas = flag.String("scale.replicas", "3", "scale: numbers of replicas, comma-separated (sweep: 1,3,5)")
	scaleNodes    = flag.String("scale.nodes", "3", "scale: numbers of redis-server nodes, comma-separated (sweep: 1,3,5)")
	scaleOverlap  = flag.String("scale.overlap", "forbid", "scale: overlap policies, comma-separated: forbid, allow")
	scaleOut      = flag.String("scale.out", "", "scale: also write the table (markdown, with the host line) to this file")
)

// TestScale is the scale benchmark of issue #13: for every point (jobs ×
// replicas × nodes × overlap) it starts redis-server nodes and `slotlock
// run` replicas as separate processes, N every-second `log` jobs
// (log.level info, log.format json, lock.ttl 10s, misfire skip), lets them
// warm up, measures a window of whole seconds and prints one table row per
// point. Only exactly-once is asserted: a slot started twice fails the
// test; every figure is reported, none judged. Run it with:
//
//	go test ./e2e -run TestScale -scale -scale.jobs 100,1000,5000 -scale.seconds 20 -v -timeout 30m
//	go test ./e2e -run TestScale -scale -scale.jobs 1000 -scale.replicas 1,3,5 -scale.nodes 1,3,5 -v -timeout 30m
func TestScale(t *testing.T) {
	if !*scaleFlag {
		t.Skip("scale: set -scale to run the scale benchmark")
	}
	requireSuite(t)
	jobs, err1 := intList(*scaleJobs)
	replicas, err2 := intList(*scaleReplicas)
	nodes, err3 := intList(*scaleNodes)
	overlaps := strings.Split(*scaleOverlap, ",")
	for _, err := range []error{err1, err2, err3} {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range overlaps {
		if o != "forbid" && o != "allow" {
			t.Fatalf("scale: -scale.overlap %q: want forbid or allow", o)
		}
	}
	if *scaleSeconds < 1 || *scaleWarmup < 0 {
		t.Fatal("scale: -scale.seconds must be at least 1 and -scale.warmup not negative")
	}
	host := HostLine()
	t.Log(host)
	var results []ScaleResult
	for _, o := range overlaps {
		for _, r := range replicas {
			for _, n := range nodes {
				for _, j := range jobs {
					p := ScalePoint{Jobs: j, Replicas: r, Nodes: n, Overlap: o}
					t.Run(p.String(), func(t *testing.T) {
						res := runScalePoint(t, p, time.Duration(*scaleWarmup)*time.Second, *scaleSeconds, nil)
						t.Logf("\n%s\n%s", ScaleHeader, res.Row())
						t.Logf("commands per slot per node: %s", res.CommandMix())
						results = append(results, res)
					})
				}
			}
		}
	}
	table := fmt.Sprintf("%s; window %d s per point after %d s of warm-up\n\n%s",
		host, *scaleSeconds, *scaleWarmup, ScaleTable(results))
	fmt.Println(table)
	t.Log("\n" + table)
	if *scaleOut != "" {
		if err := os.WriteFile(*scaleOut, []byte(table+"\n"), 0o644); err != nil {
			t.Errorf("scale: write %s: %v", *scaleOut, err)
		}
	}
}

// runScalePoint measures one point; it fails the test on a duplicate run.
// With load, the replicas serve the status page (Spec.UI) and load runs
// over the measured window, until stop is closed.
func runScalePoint(t *testing.T, p ScalePoint, warmup time.Duration, seconds int, load func(c *Cluster, stop <-chan struct{})) ScaleResult {
	defs := make([]JobDef, p.Jobs)
	names := make([]string, p.Jobs)
	for i := range defs {
		names[i] = fmt.Sprintf("s%05d", i)
		defs[i] = JobDef{Name: names[i], Schedule: "* * * * * *", Log: "x", Forbid: p.Overlap == "forbid"}
	}
	c := NewCluster(t, bins, Spec{Nodes: p.Nodes, ProxyNode: -1, TTL: 10 * time.Second, LogLevel: "info", Jobs: defs,
		UI: load != nil})
	var replicas []string
	for i := range p.Replicas {
		replicas = append(replicas, fmt.Sprintf("r%d", i+1))
	}
	c.StartAll(replicas...)
	from := NextSecond(time.Now()).Add(warmup)
	to := from.Add(time.Duration(seconds) * time.Second)

	// The counters are read half a second before the window's first slot
	// and after its last one, between two bursts of slots: read on the
	// whole second, they would cut a burst at a random point. The
	// resources' window is as long as the slots' and holds their bursts.
	SleepUntil(from.Add(-time.Second / 2))
	start, err := c.SampleScale()
	if err != nil {
		t.Fatal(err)
	}
	stopLoad := func() {}
	if load != nil {
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { defer close(done); load(c, stop) }()
		stopLoad = func() { close(stop); <-done }
	}
	SleepUntil(to.Add(-time.Second / 2))
	stopLoad() // the window's slots are all due: the load has done its part
	end, err := c.SampleScale()
	if err != nil {
		t.Fatal(err)
	}
	rss, hwm, err := c.ReplicaMemory()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Running()) != p.Replicas {
		t.Errorf("scale: only %v of %d replicas still running at the window's end", c.Running(), p.Replicas)
	}

	// Let the window's last slots be decided (run, or shed as late past
	// the lateness bound) before stopping: poll the logs until every
	// expected slot is accounted for, for at most 30 s.
	logs := func() []string { ps, _ := filepath.Glob(filepath.Join(c.Dir(), "*.log")); return ps }
	SleepUntil(to.Add(3 * time.Second))
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Second) {
		tl, err := TallySlots(names, from, to, logs()...)
		if err != nil {
			t.Fatal(err)
		}
		if tl.NotRun["unexplained"] == 0 {
			break
		}
	}
	c.StopAll()
	c.mu.Lock()
	for _, e := range c.exitErrs {
		t.Logf("scale: shutdown (not judged here): %s", e)
	}
	c.mu.Unlock()

	tl, err := TallySlots(names, from, to, logs()...)
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.Duplicates) > 0 {
		show := tl.Duplicates[:min(len(tl.Duplicates), 10)]
		t.Errorf("scale: %d slots started more than once (first %d):\n  %s", len(tl.Duplicates), len(show), strings.Join(show, "\n  "))
	}
	if len(tl.Phantoms) > 0 {
		show := tl.Phantoms[:min(len(tl.Phantoms), 10)]
		t.Errorf("scale: %d run.abandoned lines for slots that no replica started (first %d):\n  %s", len(tl.Phantoms), len(show), strings.Join(show, "\n  "))
	}
	if n := tl.NotRun["unexplained"]; n > 0 {
		t.Errorf("scale: %d slots in the window have neither run.started nor slot.skipped/slot.missed explaining them", n)
	}
	return ScaleResult{ScalePoint: p, Tally: tl, Start: start, End: end, RSS: rss, HWM: hwm}
}

func intList(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("scale: %q is not a list of positive numbers", s)
		}
		out = append(out, n)
	}
	return out, nil
}
