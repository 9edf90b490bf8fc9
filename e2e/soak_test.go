//go:build linux

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking/redistest"
)

// TestSoak runs one cluster (3 Redis nodes with append-only files, node 2
// behind the fault proxy; 3 replicas, each reaching each node through a
// link of its own) for the -soak duration while faults
// are injected one at a time at random, with a printed seed. It fails on
// any finding of the checker, as the scenarios do, and prints a summary
// table. Run it with:
//
//	go test ./e2e/ -run Soak -soak 10m -timeout 30m -v
//
// (or SLOTLOCK_SOAK=10m); -seed N replays a fault schedule (with the same
// -soak.faults); -soak.faults a,b draws from those faults only.
func TestSoak(t *testing.T) {
	d := soakDuration(t)
	if d == 0 {
		t.Skip("soak: set -soak 10m (or SLOTLOCK_SOAK=10m) to run it")
	}
	if d < time.Minute {
		t.Fatalf("soak: %v is too short; use at least 1m", d)
	}
	requireSuite(t)
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	t.Logf("soak: %v, seed %d (replay with -seed %d)", d, seed, seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5107))
	faults := drawnFaults(t, *faultsFlag)

	long := JobDef{Name: "long", Schedule: "* * * * * *", Sleep: 2500 * time.Millisecond, Forbid: true}
	c := NewCluster(t, bins, Spec{ProxyNode: 2, Links: true, AppendOnly: true, SteppableClocks: true, PipedLogs: true, ConfigPerReplica: true, Jobs: []JobDef{tick, guard, five, long}})
	start := time.Now()
	c.StartAll("r1", "r2", "r3")
	from := NextSecond(time.Now()).Add(time.Second)
	end := start.Add(d)

	s := &soak{c: c, rng: rng, t: t, offsets: map[string]time.Duration{}, reloaded: map[string]bool{}}
	counts := map[string]int{}
	var log []string
	for time.Until(end) > 25*time.Second {
		time.Sleep(time.Duration(3000+rng.IntN(5000)) * time.Millisecond)
		f := faults[rng.IntN(len(faults))]
		at := time.Now()
		what := f.run(s)
		counts[f.name]++
		line := fmt.Sprintf("%s +%-6v %-24s %s", stamp(at), at.Sub(start).Round(time.Second), f.name, what)
		log = append(log, line)
		t.Log(line)
	}
	// Every replica back at offset 0 is not needed; let the last fault
	// settle, then judge everything up to a few seconds before the end.
	to := time.Now().Add(15 * time.Second).Truncate(time.Second)
	SleepUntil(to.Add(3 * time.Second))
	r := c.Check(from, to)

	total := 0
	var kinds []string
	for k, n := range counts {
		total += n
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(kinds)
	table := soakTable(d, seed, total, kinds, r, to.Sub(from))
	fmt.Println(table)
	t.Log("\n" + table)
	if p := os.Getenv("SLOTLOCK_SOAK_REPORT"); p != "" {
		body := table + "\n\nFault log:\n\n```\n" + strings.Join(log, "\n") + "\n```\n"
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Errorf("write soak report: %v", err)
		}
	}
}

// TestSoakGap is the all-replicas-down scenario with a minute-long gap,
// run in soak mode only (the short suite uses 16 s).
func TestSoakGap(t *testing.T) {
	if soakDuration(t) == 0 {
		t.Skip("soak: set -soak 10m (or SLOTLOCK_SOAK=10m) to run it")
	}
	requireSuite(t)
	scenarioGap(t, time.Minute)
}

func soakDuration(t *testing.T) time.Duration {
	d := *soakFlag
	if d == 0 {
		if v := os.Getenv("SLOTLOCK_SOAK"); v != "" {
			var err error
			if d, err = time.ParseDuration(v); err != nil {
				t.Fatalf("SLOTLOCK_SOAK=%q: %v", v, err)
			}
		}
	}
	return d
}

func soakTable(d time.Duration, seed int64, total int, kinds []string, r Report, window time.Duration) string {
	rows := [][2]string{
		{"duration (checked window)", fmt.Sprintf("%v (%v)", d, window.Round(time.Second))},
		{"seed", fmt.Sprint(seed)},
		{"faults injected", fmt.Sprintf("%d: %s", total, strings.Join(kinds, ", "))},
		{"slots expected", fmt.Sprint(r.Slots)},
		{"slots run", fmt.Sprint(r.Ran)},
		{"slots skipped: overlap (forbid, a run going on)", fmt.Sprint(r.OverlapSkipped)},
		{"runs", fmt.Sprint(r.Runs)},
		{"duplicates", fmt.Sprint(r.Duplicates)},
		{"misses outside fault windows", fmt.Sprint(r.Misses)},
		{"slots not run inside declared fault windows", fmt.Sprint(r.MissesExcused)},
		{"overlaps (excused: frozen replica's stale run)", fmt.Sprintf("%d (%d)", r.Overlaps, r.ExcusedOverlaps)},
		{"fencing-token violations", fmt.Sprint(r.TokenViolations)},
		{"unexplained slots", fmt.Sprint(r.Unexplained)},
		{"ledger/log mismatches", fmt.Sprint(r.LogMismatches)},
	}
	var b strings.Builder
	b.WriteString("| soak | result |\n|---|---|\n")
	for _, row := range rows {
		fmt.Fprintf(&b, "| %s | %s |\n", row[0], row[1])
	}
	return b.String()
}

type soak struct {
	t       *testing.T
	c       *Cluster
	rng     *rand.Rand
	offsets map[string]time.Duration
	// reloaded: the replicas whose file has the toggled timeouts
	// (replica_reload).
	reloaded map[string]bool
}

// drawnFaults are the faults a soak draws from: those named (-soak.faults),
// or all. An unknown name fails the test with the names it knows.
func drawnFaults(t *testing.T, names string) []soakFault {
	if names == "" {
		return soakFaults
	}
	var out []soakFault
	for _, n := range strings.Split(names, ",") {
		i := slices.IndexFunc(soakFaults, func(f soakFault) bool { return f.name == strings.TrimSpace(n) })
		if i < 0 {
			known := make([]string, len(soakFaults))
			for j, f := range soakFaults {
				known[j] = f.name
			}
			t.Fatalf("soak: no fault %q (-soak.faults); the faults are %s", n, strings.Join(known, ", "))
		}
		out = append(out, soakFaults[i])
	}
	t.Logf("soak: drawing from %d of %d faults: %s", len(out), len(soakFaults), names)
	return out
}

func (s *soak) dur(minMs, maxMs int) time.Duration {
	return time.Duration(minMs+s.rng.IntN(maxMs-minMs+1)) * time.Millisecond
}

// majorityOut takes two Redis nodes of three, picked at random, out with
// out for 2–6 s, and back with in; it returns once they are back, with
// which nodes and for how long.
func (s *soak) majorityOut(out, in func(*redistest.Node) error) (i, j int, d time.Duration) {
	i = s.rng.IntN(3)
	j = (i + 1 + s.rng.IntN(2)) % 3
	for _, k := range []int{i, j} {
		if err := out(s.c.Redis.Node(k)); err != nil {
			s.t.Fatal(err)
		}
	}
	d = s.dur(2000, 6000)
	time.Sleep(d)
	for _, k := range []int{i, j} {
		if err := in(s.c.Redis.Node(k)); err != nil {
			s.t.Fatal(err)
		}
	}
	return i, j, d
}

// majorityLinks picks a running replica and a node, and returns the
// replica's name, the node, and the replica's links to the other two: a
// majority its peers still reach.
func (s *soak) majorityLinks() (r string, keep int, links []*redistest.Proxy) {
	r, keep = s.replica().Name, s.rng.IntN(3)
	for i := range 3 {
		if i != keep {
			links = append(links, s.c.Links.Link(r, i))
		}
	}
	return r, keep, links
}

// dbsize is how many keys node n holds (-1 when it does not answer).
func (s *soak) dbsize(n *redistest.Node) int64 {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	k, err := n.Client().DBSize(ctx).Result()
	if err != nil {
		return -1
	}
	return k
}

func (s *soak) replica() *Replica {
	names := s.c.Running()
	return s.c.Replica(names[s.rng.IntN(len(names))])
}

type soakFault struct {
	name string
	run  func(s *soak) string
}

// soakFaults are injected one at a time. Only those that make a miss
// legitimate declare a fault window (a replica dying or frozen while it
// holds a slot, or a Redis majority gone); the rest must cause no miss.
// The groups keep the order the faults have always been drawn in, so that
// a seed replays the schedule it drew (with the same -soak.faults).
var soakFaults = slices.Concat(replicaFaults, redisProcessFaults, proxyFaults, redisCommandFaults, linkFaults)
