//go:build linux

package e2e

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
	scaleShards   = flag.String("scale.shards", "1", "scale: numbers of shards per Redis node, comma-separated; above 1 every node is a Redis Cluster endpoint of that many masters (sweep: 1,3)")
	scaleCluster  = flag.Bool("scale.cluster", false, "scale: at 1 shard too, every node is a Redis Cluster endpoint (of one master)")
	scaleEvery    = flag.Int("scale.every", 1, "scale: every job runs */N seconds, all at the same instants (bursts of as many slots as jobs); N divides 60")
)

// TestScale is the scale benchmark of issue #13: for every point (jobs ×
// replicas × nodes × overlap) it starts redis-server nodes and `slotlock
// run` replicas as separate processes, N every-second `log` jobs
// (log.level info, log.format json, lock.ttl 10s, misfire skip; every N
// seconds with -scale.every N), lets them warm up, measures a window of
// whole seconds (whole instants) and prints one table row per point.
// Only exactly-once is asserted: a slot started twice fails the test;
// every figure is reported, none judged. Run it with:
//
//	go test ./e2e -run TestScale -scale -scale.jobs 100,1000,5000 -scale.seconds 20 -v -timeout 30m
//	go test ./e2e -run TestScale -scale -scale.jobs 1000 -scale.replicas 1,3,5 -scale.nodes 1,3,5 -v -timeout 30m
//
// Side by side with an earlier revision (interleaved, pairs averaged),
// and each one's ceiling (the highest job count with nothing shed):
//
//	go test ./e2e -run TestScale -scale -scale.base ac36530 -scale.rounds 2 -scale.jobs 2000,3000,4000,6000 -v -timeout 60m
//	go test ./e2e -run TestScale -scale -scale.base ac36530 -scale.ceiling -v -timeout 90m
//
// Bursts: every job `*/10 * * * * *`, so that each instant is due for
// all of them at once (the window is rounded to whole instants):
//
//	go test ./e2e -run 'TestScale$' -scale -scale.jobs 5000,10000 -scale.every 10 -scale.seconds 30 -v -timeout 40m
//
// Scale-out: every node a Redis Cluster endpoint of 3 masters beside
// standalone nodes, with commands per slot per shard (scaleshards.go):
//
//	go test ./e2e -run 'TestScale$' -scale -scale.jobs 300 -scale.seconds 15 -scale.shards 1,3 -v -timeout 20m
//
// One replica without Redis (redis.nodes empty: in-process locks, the
// quick start's set-up), at -scale.nodes 0 with -scale.replicas 1:
//
//	go test ./e2e -run 'TestScale$' -scale -scale.jobs 1000 -scale.replicas 1 -scale.nodes 0 -v -timeout 20m
func TestScale(t *testing.T) {
	if !*scaleFlag {
		t.Skip("scale: set -scale to run the scale benchmark")
	}
	requireSuite(t)
	jobs, err1 := intList(*scaleJobs, 1)
	replicas, err2 := intList(*scaleReplicas, 1)
	nodes, err3 := intList(*scaleNodes, 0) // 0: in-process locks
	shards, err4 := intList(*scaleShards, 1)
	overlaps := strings.Split(*scaleOverlap, ",")
	for _, err := range []error{err1, err2, err3, err4} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if slices.Contains(nodes, 0) && slices.ContainsFunc(replicas, func(r int) bool { return r != 1 }) {
		t.Fatal("scale: -scale.nodes 0 (in-process locks) holds for one replica only: -scale.replicas 1")
	}
	for _, o := range overlaps {
		if o != "forbid" && o != "allow" {
			t.Fatalf("scale: -scale.overlap %q: want forbid or allow", o)
		}
	}
	if *scaleSeconds < 1 || *scaleWarmup < 0 {
		t.Fatal("scale: -scale.seconds must be at least 1 and -scale.warmup not negative")
	}
	// A period that does not divide the minute puts a shorter gap
	// before second 0: the instants would not be evenly spaced.
	if *scaleEvery < 1 || 60%*scaleEvery != 0 {
		t.Fatalf("scale: -scale.every %d: want a divisor of 60", *scaleEvery)
	}
	host := HostLine()
	t.Log(host)
	sbs := scaleBins(t)
	var points []ScalePoint
	for _, o := range overlaps {
		for _, r := range replicas {
			for _, n := range nodes {
				for _, s := range shards {
					p := ScalePoint{Replicas: r, Nodes: n, Overlap: o, Every: *scaleEvery, Shards: s, Cluster: *scaleCluster}
					if *scaleCeiling {
						points = append(points, p)
						continue
					}
					for _, j := range jobs {
						p.Jobs = j
						points = append(points, p)
					}
				}
			}
		}
	}
	var table string
	if *scaleCeiling {
		table = scaleCeilings(t, sbs, points)
	} else {
		table = scaleSweep(t, sbs, points)
	}
	table = fmt.Sprintf("%s; window %d s per point after %d s of warm-up%s\n\n%s", host, *scaleSeconds, *scaleWarmup, burstLine(*scaleEvery, *scaleSeconds), table)
	fmt.Println(table)
	t.Log("\n" + table)
	if *scaleOut != "" {
		if err := os.WriteFile(*scaleOut, []byte(table+"\n"), 0o644); err != nil {
			t.Errorf("scale: write %s: %v", *scaleOut, err)
		}
	}
}

// scaleSweep measures every point with every binary (interleaved, rounds
// times with a base) and returns each binary's table, and with a base the
// side-by-side one.
func scaleSweep(t *testing.T, sbs []scaleBin, points []ScalePoint) string {
	rounds := 1
	if len(sbs) > 1 {
		rounds = max(*scaleRounds, 1)
	}
	results := make([][]ScaleResult, len(sbs)) // per binary, every run
	var compare []string
	for _, p := range points {
		perBin := make([][]ScaleResult, len(sbs))
		for round := range rounds {
			for i, sb := range sbs {
				name := fmt.Sprintf("%s/%s/%d", p, strings.ReplaceAll(sb.label, " ", "_"), round+1)
				t.Run(name, func(t *testing.T) {
					res := runScalePointWith(t, sb.bin, p, time.Duration(*scaleWarmup)*time.Second, *scaleSeconds, nil)
					t.Logf("%s\n%s\n%s", sb.label, res.Header(), res.Row())
					t.Logf("commands per slot per node: %s", res.CommandMix())
					if shardSweep(points) {
						t.Logf("scale-out:\n%s\n%s", ShardHeader, res.ShardRow())
					}
					perBin[i] = append(perBin[i], res)
					results[i] = append(results[i], res)
				})
			}
		}
		if len(sbs) > 1 {
			compare = append(compare, CompareRow(p, meanFigures(perBin[0]), meanFigures(perBin[1])))
		}
	}
	var out []string
	for i, sb := range sbs {
		out = append(out, fmt.Sprintf("%s:\n\n%s", sb.label, ScaleTable(results[i])))
		if shardSweep(points) {
			out = append(out, fmt.Sprintf("%s, scale-out (commands from INFO commandstats of every shard):\n\n%s", sb.label, ShardTable(results[i])))
		}
	}
	if len(sbs) > 1 {
		out = append(out, fmt.Sprintf("side by side, %s → new (new ÷ base), mean of %d interleaved pair(s) per point:\n\n%s\n%s",
			sbs[0].label, rounds, compareHeaderFor(*scaleEvery), strings.Join(compare, "\n")))
	}
	return strings.Join(out, "\n\n")
}

// scaleCeilings searches, for every point (its job count ignored), each
// binary's ceiling: the binaries step in lockstep, so that each step of
// one is measured beside the other's.
func scaleCeilings(t *testing.T, sbs []scaleBin, points []ScalePoint) string {
	lines := []string{"| point | " + labels(sbs) + " |", "|---|" + strings.Repeat("---|", len(sbs))}
	factors, err := overloadFactors(*scaleOverload)
	if err != nil {
		t.Fatal(err)
	}
	var overloads []string
	for _, p := range points {
		searches := make([]*ceilingSearch, len(sbs))
		for i := range sbs {
			searches[i] = newCeilingSearch(*scaleCeilFrom)
		}
		for !allDone(searches) {
			for i, sb := range sbs {
				c := searches[i]
				if c.done() {
					continue
				}
				q := p
				q.Jobs = c.next
				t.Run(fmt.Sprintf("ceiling/%s/%s", q, strings.ReplaceAll(sb.label, " ", "_")), func(t *testing.T) {
					res := runScalePointWith(t, sb.bin, q, time.Duration(*scaleWarmup)*time.Second, *scaleSeconds, nil)
					t.Logf("%s\n%s\n%s", sb.label, res.Header(), res.Row())
					shed := res.Tally.Missed() > 0
					if !shed {
						c.goodRate = figuresOf(res).runPerSec
					}
					c.record(shed, *scaleCeilMax)
				})
				if t.Failed() {
					return strings.Join(lines, "\n")
				}
			}
		}
		cells := []string{fmt.Sprintf("%d × %d %s", p.Replicas, p.Nodes, p.Overlap)}
		for i, c := range searches {
			cell := thousands(c.good) + " jobs"
			if c.bad == 0 {
				cell = "≥ " + cell
			}
			if i > 0 && searches[0].good > 0 {
				cell += fmt.Sprintf(" (×%.2f)", float64(c.good)/float64(searches[0].good))
			}
			cells = append(cells, cell)
		}
		lines = append(lines, "| "+strings.Join(cells, " | ")+" |")
		if len(factors) > 0 {
			overloads = append(overloads, scaleOverloads(t, sbs, p, factors, goods(searches), rates(searches)))
		}
	}
	kind := "every-second jobs"
	if *scaleEvery > 1 {
		kind = fmt.Sprintf("jobs every %d s (slots of one burst)", *scaleEvery)
	}
	out := "ceiling: the highest number of " + kind + " with no slot of the window shed\n\n" + strings.Join(lines, "\n")
	for _, o := range overloads {
		out += "\n\n" + o
	}
	return out
}

func labels(sbs []scaleBin) string {
	var ls []string
	for _, sb := range sbs {
		ls = append(ls, sb.label)
	}
	return strings.Join(ls, " | ")
}

// goods and rates are the searches' ceilings and the slots run per
// second there.
func goods(cs []*ceilingSearch) []int {
	out := make([]int, len(cs))
	for i, c := range cs {
		out[i] = c.good
	}
	return out
}

func rates(cs []*ceilingSearch) []float64 {
	out := make([]float64, len(cs))
	for i, c := range cs {
		out[i] = c.goodRate
	}
	return out
}

func allDone(cs []*ceilingSearch) bool {
	for _, c := range cs {
		if !c.done() {
			return false
		}
	}
	return true
}

// runScalePoint measures one point; it fails the test on a duplicate run.
// With load, the replicas serve the status page (Spec.UI) and load runs
// over the measured window, until stop is closed.
func runScalePoint(t *testing.T, p ScalePoint, warmup time.Duration, seconds int, load func(c *Cluster, stop <-chan struct{})) ScaleResult {
	return runScalePointWith(t, bins, p, warmup, seconds, load)
}

// runScalePointWith is runScalePoint with the given binaries.
func runScalePointWith(t *testing.T, bin Binaries, p ScalePoint, warmup time.Duration, seconds int, load func(c *Cluster, stop <-chan struct{})) ScaleResult {
	defs := make([]JobDef, p.Jobs)
	names := make([]string, p.Jobs)
	for i := range defs {
		names[i] = scaleJobName(i)
		defs[i] = JobDef{Name: names[i], Schedule: p.schedule(), Log: "x", Forbid: p.Overlap == "forbid"}
	}
	c := NewCluster(t, bin, Spec{Nodes: p.Nodes, Local: p.Nodes == 0, Shards: p.Shards, ClusterMode: p.Cluster, ProxyNode: -1, TTL: 10 * time.Second,
		LogLevel: "info", Jobs: defs, UI: load != nil})
	var replicas []string
	for i := range p.Replicas {
		replicas = append(replicas, fmt.Sprintf("r%d", i+1))
	}
	c.StartAll(replicas...)
	from, to := burstWindow(NextSecond(time.Now()).Add(warmup), p.period(), seconds)

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
		tl, err := TallySlotsEvery(names, p.period(), from, to, logs()...)
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

	tl, err := TallySlotsEvery(names, p.period(), from, to, logs()...)
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

// burstLine is the table's note on bursts: their size, and how the
// window was rounded.
func burstLine(every, seconds int) string {
	if every <= 1 {
		return ""
	}
	_, to := burstWindow(time.Unix(0, 0), time.Duration(every)*time.Second, seconds)
	n := int(to.Unix()) / every
	return fmt.Sprintf("; bursts: every job `*/%d * * * * *`, a burst of one slot per job every %d s, %d instants per window (%d s); "+
		"start delays are measured from each slot's instant", every, every, n, n*every)
}

// shardSweep tells whether the points use cluster endpoints, so the
// scale-out table is worth printing.
func shardSweep(points []ScalePoint) bool {
	for _, p := range points {
		if p.Shards > 1 || p.Cluster {
			return true
		}
	}
	return false
}

func intList(s string, least int) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < least {
			return nil, fmt.Errorf("scale: %q is not a list of numbers of at least %d", s, least)
		}
		out = append(out, n)
	}
	return out, nil
}
