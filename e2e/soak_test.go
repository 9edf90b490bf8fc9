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
var soakFaults = []soakFault{
	{"replica_sigkill", func(s *soak) string {
		r := s.replica()
		at := time.Now()
		r.Kill()
		s.c.Faults.Legit(s.c.Faults.Start(at), at.Add(s.c.spec.TTL+time.Second), "replica "+r.Name+" SIGKILLed")
		d := s.dur(500, 3000)
		time.Sleep(d)
		s.c.StartReplica(r.Name, s.offsets[r.Name])
		return fmt.Sprintf("%s, restarted after %v", r.Name, d)
	}},
	{"replica_freeze_2ttl", func(s *soak) string {
		r := s.replica()
		f := r.Freeze(2 * s.c.spec.TTL)
		s.c.Faults.Legit(s.c.Faults.Start(f.From), f.To.Add(s.c.spec.TTL+time.Second), "replica "+r.Name+" frozen")
		return r.Name
	}},
	{"replica_freeze_half_ttl", func(s *soak) string {
		// Shorter than the lease: nothing is lost, so no fault window.
		r := s.replica()
		r.Freeze(s.c.spec.TTL / 2)
		return r.Name
	}},
	{"replica_log_stall_3ttl", func(s *soak) string {
		// Unfit after half a TTL; its leases lapse a TTL after their last
		// renewal (scenario log_stall).
		r := s.replica()
		at := time.Now()
		s.c.Faults.Legit(s.c.Faults.Start(at), at.Add(s.c.spec.TTL/2+s.c.spec.TTL+time.Second), "replica "+r.Name+"'s log output blocked")
		r.StallLogs(3 * s.c.spec.TTL)
		return r.Name
	}},
	{"replica_cpu_throttled", func(s *soak) string {
		// A tenth of a core (scenario cpu_throttle): slow, not gone, so
		// no fault window.
		r := s.replica()
		d := s.dur(3000, 8000)
		r.Throttle(d, 10*time.Millisecond, 90*time.Millisecond)
		return fmt.Sprintf("%s ran 10 ms of every 100 ms for %v", r.Name, d)
	}},
	{"replica_sigterm_restart", func(s *soak) string {
		r := s.replica()
		d, code := r.Stop()
		gap := s.dur(200, 2000)
		time.Sleep(gap)
		s.c.StartReplica(r.Name, s.offsets[r.Name])
		return fmt.Sprintf("%s exit %d after %v, restarted after %v", r.Name, code, d.Round(time.Millisecond), gap)
	}},
	{"replica_reload", func(s *soak) string {
		// A job file rolled out to one replica (hot reload, the file
		// renamed over the old one): every job's timeout toggled, so all
		// four are replaced under their names while runs go on — `long`,
		// forbid and longer than the gap between slots, always has one.
		// The fleet stays mixed until the next draw toggles it back, and
		// the other faults meet it so. One draw in three first rolls out
		// a broken file (a schedule with a 61st second), which the
		// replica must reject while every job goes on as it was.
		r := s.replica()
		rejected := ""
		if s.rng.IntN(3) == 0 {
			broken := slices.Clone(s.c.spec.Jobs)
			broken[0].Schedule = "61 * * * * *"
			if line := s.c.Reconfigure(r.Name, s.c.RenderJobs(broken)); str(line["event"]) != "config.rejected" {
				s.t.Fatalf("%s took a file with the schedule %q: %v", r.Name, broken[0].Schedule, line)
			}
			rejected = "a broken file rejected, then "
		}
		timeout := time.Minute
		if s.reloaded[r.Name] = !s.reloaded[r.Name]; s.reloaded[r.Name] {
			timeout = 50 * time.Second
		}
		jobs := slices.Clone(s.c.spec.Jobs)
		for i := range jobs {
			jobs[i].Timeout = timeout
		}
		line := s.c.Reconfigure(r.Name, s.c.RenderJobs(jobs))
		if str(line["event"]) != "config.reloaded" {
			s.t.Fatalf("%s rejected a valid job file: %v", r.Name, line)
		}
		return fmt.Sprintf("%s: %sreloaded, every job's timeout %v (changed: %v)", r.Name, rejected, timeout, line.Strings("changed"))
	}},
	{"replica_clock_offset", func(s *soak) string {
		r := s.replica()
		off := []time.Duration{-s.c.spec.Skew * 8 / 10, 0, s.c.spec.Skew * 8 / 10}[s.rng.IntN(3)]
		r.Stop()
		s.offsets[r.Name] = off
		s.c.StartReplica(r.Name, off)
		return fmt.Sprintf("%s restarted with SLOTLOCK_CLOCK_OFFSET=%v", r.Name, off)
	}},
	{"redis_kill_one", func(s *soak) string {
		i := s.rng.IntN(3)
		n := s.c.Redis.Node(i)
		if err := n.Kill(); err != nil {
			s.t.Fatal(err)
		}
		d := s.dur(2000, 8000)
		time.Sleep(d)
		if err := n.Start(); err != nil {
			s.t.Fatal(err)
		}
		return fmt.Sprintf("node %d down %v", i, d)
	}},
	{"redis_restart_empty", func(s *soak) string {
		// Node 0 only: it comes back without its data (its files removed
		// before it starts), the other two keep theirs, so every majority
		// still holds the fencing history, as the contract asks. Not a
		// FLUSHALL after the start: the node would have acknowledged
		// claims in between and then lost them — outside the contract —
		// and a claim that reached a bare majority of it and one other
		// node was then claimed again (a soak, seed 1796299318015521334).
		n := s.c.Redis.Node(0)
		if err := n.Kill(); err != nil {
			s.t.Fatal(err)
		}
		d := s.dur(500, 4000)
		time.Sleep(d)
		if err := n.StartEmpty(); err != nil {
			s.t.Fatal(err)
		}
		return fmt.Sprintf("node 0 down %v, back empty", d)
	}},
	{"redis_failover_one", func(s *soak) string {
		// A managed cache failing over to a replica that lagged: the node
		// runs on for a while after a checkpoint, is lost, and comes back
		// with what it held at the checkpoint — the writes of those seconds
		// lost, what it deleted then back (ended claims with their leases,
		// released job leases, undone claims), the fencing counter lower.
		// The other two keep everything (one fault at a time): the
		// condition under which the guarantee covers a failover. No fault
		// window: a majority answers throughout.
		i := s.rng.IntN(3)
		n := s.c.Redis.Node(i)
		cp, err := n.Checkpoint()
		if err != nil {
			s.t.Fatal(err)
		}
		lag := s.dur(500, 5000)
		time.Sleep(lag)
		keys := s.dbsize(n)
		if err := n.Kill(); err != nil {
			s.t.Fatal(err)
		}
		down := s.dur(100, 1000)
		time.Sleep(down)
		if err := n.StartFrom(cp); err != nil {
			s.t.Fatal(err)
		}
		return fmt.Sprintf("node %d back %v later from its state %v before it was lost (keys %d, then %d)", i, down, lag, keys, s.dbsize(n))
	}},
	{"redis_clock_step_one", func(s *soak) string {
		// One node's wall clock stepped (a bad time source, a VM resumed
		// from a snapshot, an operator's date): forward by one to three
		// lock TTLs, which ends at once every lease and claim the node
		// holds and makes its scripts judge every run there expired, or
		// back as far, which keeps them late; the real time again after
		// 1–5 s, which keeps what the node set meanwhile that much longer
		// (or ends it early). The other two keep the right time (one fault
		// at a time): no fault window.
		i := s.rng.IntN(3)
		n := s.c.Redis.Node(i)
		step := s.c.spec.TTL * time.Duration(2+s.rng.IntN(5)) / 2
		if s.rng.IntN(3) == 0 {
			step = -step
		}
		keys := s.dbsize(n)
		if err := n.StepClock(step); err != nil {
			s.t.Fatal(err)
		}
		d := s.dur(1000, 5000)
		time.Sleep(d)
		stepped := s.dbsize(n) // the expired keys go within the step
		if err := n.StepClock(0); err != nil {
			s.t.Fatal(err)
		}
		return fmt.Sprintf("node %d's clock stepped %v for %v (keys %d, then %d)", i, step, d, keys, stepped)
	}},
	{"redis_kill_two", func(s *soak) string {
		// Back, the majority answers at once the claims retried while it
		// was down: a slot due in the outage (retried until its lateness
		// ends) and the next one (a replica whose clock runs ahead fires
		// it early) are then claimed together, and their allow runs may
		// start a few milliseconds out of token order, as after a frozen
		// majority (seed 1796464461892896055: tick's slots :45 and :46,
		// tokens 439 and 438, started 2 ms apart, r3 at +800 ms).
		at := time.Now()
		i, j, d := s.majorityOut((*redistest.Node).Kill, (*redistest.Node).Start)
		back := time.Now()
		s.c.Faults.Legit(s.c.Faults.Start(at), back.Add(time.Second), "Redis majority down")
		s.c.Faults.ClaimsTogether(s.c.Faults.Start(at), back.Add(s.c.spec.lateness()), "Redis majority down")
		return fmt.Sprintf("nodes %d and %d down %v", i, j, d)
	}},
	{"redis_pause_one", func(s *soak) string {
		i := s.rng.IntN(3)
		n := s.c.Redis.Node(i)
		if err := n.Pause(); err != nil {
			s.t.Fatal(err)
		}
		d := s.dur(2000, 6000)
		time.Sleep(d)
		if err := n.Resume(); err != nil {
			s.t.Fatal(err)
		}
		return fmt.Sprintf("node %d SIGSTOP %v", i, d)
	}},
	{"redis_pause_two", func(s *soak) string {
		// A majority frozen: unlike killed nodes it keeps its connections
		// open, so the replicas' calls queue behind pipelines it never
		// answers, and run when it resumes (their senders undo them).
		at := time.Now()
		i, j, d := s.majorityOut((*redistest.Node).Pause, (*redistest.Node).Resume)
		back := time.Now()
		s.c.Faults.Legit(s.c.Faults.Start(at), back.Add(time.Second), "Redis majority frozen")
		s.c.Faults.ClaimsTogether(s.c.Faults.Start(at), back.Add(s.c.spec.lateness()), "Redis majority frozen")
		return fmt.Sprintf("nodes %d and %d SIGSTOP %v", i, j, d)
	}},
	{"proxy_latency_below_op_timeout", func(s *soak) string {
		l := s.c.spec.OpTimeout * 3 / 10
		s.c.Proxy.SetLatency(l)
		d := s.dur(3000, 8000)
		time.Sleep(d)
		s.c.Proxy.SetLatency(0)
		return fmt.Sprintf("node 2 +%v each way for %v", l, d)
	}},
	{"proxy_latency_above_op_timeout", func(s *soak) string {
		l := s.c.spec.OpTimeout * 3 / 2
		s.c.Proxy.SetLatency(l)
		d := s.dur(3000, 8000)
		time.Sleep(d)
		s.c.Proxy.SetLatency(0)
		return fmt.Sprintf("node 2 +%v each way for %v", l, d)
	}},
	{"proxy_blackhole", func(s *soak) string {
		s.c.Proxy.SetMode(redistest.Blackhole)
		d := s.dur(3000, 8000)
		time.Sleep(d)
		s.c.Proxy.SetMode(redistest.Pass)
		return fmt.Sprintf("node 2 for %v", d)
	}},
	{"proxy_lose_replies", func(s *soak) string {
		// Requests reach node 2 and run; their answers never come back.
		s.c.Proxy.SetMode(redistest.LoseReplies)
		d := s.dur(3000, 8000)
		time.Sleep(d)
		s.c.Proxy.SetMode(redistest.Pass)
		return fmt.Sprintf("node 2 for %v", d)
	}},
	{"redis_pause_writes_one", func(s *soak) string {
		// Reads answered, writes held (and dropped when their callers
		// give up), for up to two lock TTLs.
		i := s.rng.IntN(3)
		d := s.dur(1000, int(2*s.c.spec.TTL/time.Millisecond))
		if err := s.c.Redis.Node(i).PauseWrites(d); err != nil {
			s.t.Fatal(err)
		}
		time.Sleep(d)
		return fmt.Sprintf("node %d CLIENT PAUSE WRITE %v", i, d)
	}},
	{"redis_out_of_memory_one", func(s *soak) string {
		// Memory full (maxmemory reached, noeviction): every write
		// refused with OOM, reads answered.
		i := s.rng.IntN(3)
		d := s.dur(2000, 6000)
		setMaxmemory(s.t, s.c.Redis.Node(i), "1")
		time.Sleep(d)
		setMaxmemory(s.t, s.c.Redis.Node(i), "0")
		return fmt.Sprintf("node %d out of memory for %v", i, d)
	}},
	{"redis_refuse_writes_one", func(s *soak) string {
		// Every write refused, renewals and releases too, reads answered
		// and the data kept: a primary under min-replicas-to-write whose
		// replicas fell behind (NOREPLICAS), as a demoted node refuses
		// with READONLY. A run that ends meanwhile leaves its claim there.
		i := s.rng.IntN(3)
		d := s.dur(1000, 6000)
		n := s.c.Redis.Node(i)
		if err := n.RefuseWrites(true); err != nil {
			s.t.Fatal(err)
		}
		time.Sleep(d)
		if err := n.RefuseWrites(false); err != nil {
			s.t.Fatal(err)
		}
		return fmt.Sprintf("node %d refused every write for %v", i, d)
	}},
	{"redis_refuse_writes_two", func(s *soak) string {
		// A majority refusing writes: no claim, renewal or release goes
		// through, the claims read (done markers, the history) still
		// answer; back, the slots retried in the meantime are claimed
		// together, as after a majority down.
		at := time.Now()
		i, j, d := s.majorityOut(func(n *redistest.Node) error { return n.RefuseWrites(true) },
			func(n *redistest.Node) error { return n.RefuseWrites(false) })
		back := time.Now()
		s.c.Faults.Legit(s.c.Faults.Start(at), back.Add(time.Second), "Redis majority refusing writes")
		s.c.Faults.ClaimsTogether(s.c.Faults.Start(at), back.Add(s.c.spec.lateness()), "Redis majority refusing writes")
		return fmt.Sprintf("nodes %d and %d refused every write for %v", i, j, d)
	}},
	{"redis_busy_script_one", func(s *soak) string {
		// Another client's runaway script: every command held, then,
		// past the busy threshold, answered BUSY unexecuted.
		i := s.rng.IntN(3)
		d, threshold := s.dur(2000, 6000), s.dur(100, 1000)
		if err := s.c.Redis.Node(i).BusyScript(d, threshold); err != nil {
			s.t.Fatal(err)
		}
		return fmt.Sprintf("node %d busy with a script for %v (BUSY after %v)", i, d, threshold)
	}},
	{"redis_script_flush_one", func(s *soak) string {
		// The node's script cache emptied while the fleet claims: each
		// call is answered NOSCRIPT and sent again with its source.
		i := s.rng.IntN(3)
		flushScripts(s.t, s.c.Redis.Node(i))
		time.Sleep(s.dur(1000, 3000))
		return fmt.Sprintf("node %d SCRIPT FLUSH", i)
	}},
	{"redis_client_kill_one", func(s *soak) string {
		// Every connection to the node closed by the node (a managed
		// Redis patching or scaling), twice a second for a while: calls
		// in flight lost, every client reconnecting.
		i := s.rng.IntN(3)
		d := s.dur(1000, 4000)
		var closed int64
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
			n, err := s.c.Redis.Node(i).KillClients()
			if err != nil {
				s.t.Fatal(err)
			}
			closed += n
		}
		return fmt.Sprintf("node %d closed its clients' connections for %v (%d closed)", i, d, closed)
	}},
	{"link_cut_one", func(s *soak) string {
		// One replica cut from one node its peers still reach (a
		// partition between hosts): packets dropped, connections reset or
		// replies lost. It keeps a majority, so no fault window.
		r, i := s.replica().Name, s.rng.IntN(3)
		mode := []redistest.ProxyMode{redistest.Blackhole, redistest.Reject, redistest.LoseReplies}[s.rng.IntN(3)]
		d := s.dur(2000, 8000)
		s.c.Links.Link(r, i).SetMode(mode)
		time.Sleep(d)
		s.c.Links.Link(r, i).SetMode(redistest.Pass)
		return fmt.Sprintf("%s cut from node %d (%v) for %v", r, i, mode, d)
	}},
	{"link_isolate_one", func(s *soak) string {
		// One replica cut from two nodes, a majority its peers still
		// reach: it goes on running, its renewals fail, and it must stop
		// its run before its lease lapses, when a peer may take the job
		// over (no overlap, no duplicate, tokens in order). Its job lease
		// keeps the forbid job out for up to a TTL: a fault window from
		// the cut, or, when only its replies are lost, from the cut to a
		// TTL after its end — its claims land on the nodes, where its
		// peers find them held, and it undoes them: such a slot is missed
		// (slot.missed). Duplicates and overlaps are never excused.
		r, keep, links := s.majorityLinks()
		mode := []redistest.ProxyMode{redistest.Blackhole, redistest.Reject, redistest.LoseReplies}[s.rng.IntN(3)]
		d := s.dur(2000, 8000)
		cut := func(m redistest.ProxyMode) {
			for _, l := range links {
				l.SetMode(m)
			}
		}
		at := time.Now()
		cut(mode)
		time.Sleep(d)
		cut(redistest.Pass)
		until := at
		if mode == redistest.LoseReplies {
			until = time.Now()
		}
		s.c.Faults.Legit(s.c.Faults.Start(at), until.Add(s.c.spec.TTL+time.Second), "replica "+r+" cut from a majority")
		return fmt.Sprintf("%s cut from every node but %d (%v) for %v", r, keep, mode, d)
	}},
	{"link_slow_majority_one", func(s *soak) string {
		// One replica's links to two nodes slower than its op timeout
		// (a congested route): its requests run there late, after it gave
		// up on them and sent their undo behind them, and its renewals
		// land late; to itself it has no majority. Windows as for
		// link_isolate_one with its replies lost: what it sent lands until
		// the delay drains, and its peers find its claims held there until
		// their undo follows (a new connection's handshake takes a round
		// trip: releaseWait in locking/redlock).
		r, keep, links := s.majorityLinks()
		l := s.c.spec.OpTimeout * time.Duration(3+s.rng.IntN(6)) / 2
		d := s.dur(2000, 8000)
		at := time.Now()
		for _, link := range links {
			link.SetLatency(l)
		}
		time.Sleep(d)
		for _, link := range links {
			link.SetLatency(0)
		}
		s.c.Faults.Legit(s.c.Faults.Start(at), time.Now().Add(l+s.c.spec.TTL+time.Second), "replica "+r+" slowed on a majority")
		return fmt.Sprintf("%s +%v each way to every node but %d for %v", r, l, keep, d)
	}},
	{"link_flap_all_one", func(s *soak) string {
		// One replica's connections to every node reset together every
		// 100-400 ms (a flapping interface, a NAT table flushed): the
		// calls in flight at each reset fail everywhere at once, and it
		// reconnects in between. It reaches a majority between resets and
		// its retries and renewals carry it: no fault window.
		r := s.replica().Name
		d := s.dur(2000, 8000)
		resets := 0
		for end := time.Now().Add(d); time.Now().Before(end); resets++ {
			for i := range 3 {
				s.c.Links.Link(r, i).Cut()
			}
			time.Sleep(s.dur(100, 400))
		}
		return fmt.Sprintf("%s's connections to every node reset %d times in %v", r, resets, d)
	}},
	{"link_split_views", func(s *soak) string {
		// Every running replica cut from another node: each keeps a
		// majority, every two share one node only.
		names := s.c.Running()
		shift, mode := s.rng.IntN(3), []redistest.ProxyMode{redistest.Blackhole, redistest.LoseReplies}[s.rng.IntN(2)]
		d := s.dur(2000, 8000)
		var cuts []string
		for k, r := range names {
			s.c.Links.Link(r, (k+shift)%3).SetMode(mode)
			cuts = append(cuts, fmt.Sprintf("%s from node %d", r, (k+shift)%3))
		}
		time.Sleep(d)
		for k, r := range names {
			s.c.Links.Link(r, (k+shift)%3).SetMode(redistest.Pass)
		}
		return fmt.Sprintf("%s (%v) for %v", strings.Join(cuts, ", "), mode, d)
	}},
	{"proxy_reject", func(s *soak) string {
		s.c.Proxy.SetMode(redistest.Reject)
		d := s.dur(2000, 6000)
		time.Sleep(d)
		s.c.Proxy.SetMode(redistest.Pass)
		return fmt.Sprintf("node 2 for %v", d)
	}},
}
