//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking/redistest"
)

// The short-mode scenarios of issue 6. Each runs its own Redis nodes and
// three `slotlock run` processes for 20-35 s; they run two at a time
// (t.Parallel under the default -parallel = GOMAXPROCS), the whole set in
// about two to three minutes on two cores.
//
// Every scenario ends with Cluster.Check: SIGTERM to every replica (each
// must exit 0 within shutdown.grace), then the checker over the ledger and
// the logs for the scenario's window, failing on any duplicate, miss
// outside the declared fault windows, overlap, token violation, log
// mismatch or unexplained slot.

var (
	tick  = JobDef{Name: "tick", Schedule: "* * * * * *", Sleep: 300 * time.Millisecond}
	guard = JobDef{Name: "guard", Schedule: "* * * * * *", Sleep: 400 * time.Millisecond, Forbid: true}
	five  = JobDef{Name: "five", Schedule: "*/5 * * * * *", Sleep: 1500 * time.Millisecond}
)

func TestScenario(t *testing.T) {
	requireSuite(t)
	for _, sc := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"steady", scenarioSteady},
		{"replica_sigkill", scenarioReplicaKill},
		{"replica_freeze", scenarioReplicaFreeze},
		{"redis_nodes_down", scenarioRedisDown},
		{"redis_slow_unreachable", scenarioRedisSlow},
		{"redis_failover", scenarioRedisFailover},                         // failover_test.go
		{"redis_clock_step", scenarioRedisClockStep},                      // clockstep_test.go
		{"split_views", scenarioSplitViews},                               // splitviews_test.go
		{"redis_majority_frozen_run_once", scenarioMajorityFrozenRunOnce}, // majority_frozen_test.go
		{"clock_offsets", scenarioClockOffsets},
		{"long_job_forbid", scenarioLongJob},
		{"rolling_restart", scenarioRollingRestart},
		{"all_down_gap_run_once", func(t *testing.T) { scenarioGap(t, 16*time.Second) }},
		{"manual_trigger_forbid", scenarioTrigger},
		{"crash_restart_run_once", func(t *testing.T) { scenarioCrashRestart(t, "run_once") }},
		{"crash_restart_skip", func(t *testing.T) { scenarioCrashRestart(t, "skip") }},
		{"pause_kill_history", scenarioPauseKillHistory},
		{"reload", scenarioReload},            // reload_test.go
		{"log_stall", scenarioLogStall},       // logstall_test.go
		{"cpu_throttle", scenarioCPUThrottle}, // throttle_test.go
	} {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			sc.run(t)
		})
	}
}

// steady: 30 s of three replicas; every slot in the window runs exactly once.
func scenarioSteady(t *testing.T) {
	c := NewCluster(t, bins, Spec{ProxyNode: -1, Jobs: []JobDef{tick, guard, five}})
	up := c.StartAll("r1", "r2", "r3")
	from := NextSecond(up).Add(time.Second)
	to := from.Add(29 * time.Second)
	SleepUntil(to.Add(2 * time.Second))
	r := c.Check(from, to)
	if r.Ran != r.Slots {
		t.Errorf("steady: %d of %d slots ran", r.Ran, r.Slots)
	}
	logSpread(t, c.Runs())
}

// A replica is killed with SIGKILL (with its job) in the middle of a run
// and restarted two seconds later.
func scenarioReplicaKill(t *testing.T) {
	slow := JobDef{Name: "tick", Schedule: "* * * * * *", Sleep: 700 * time.Millisecond}
	c := NewCluster(t, bins, Spec{ProxyNode: -1, Jobs: []JobDef{slow, guard}})
	up := c.StartAll("r1", "r2", "r3")
	from := NextSecond(up).Add(time.Second)
	SleepUntil(from.Add(3 * time.Second))

	victim := c.WaitOpenRun("tick", 5*time.Second)
	kill := time.Now()
	c.Replica(victim.Replica).Kill()
	// The victim may have won slots it never started, and guard's job
	// lease lingers for a TTL: those slots may go unrun.
	c.Faults.Legit(c.Faults.Start(kill), kill.Add(c.spec.TTL+time.Second), "replica "+victim.Replica+" SIGKILLed")
	time.Sleep(2 * time.Second)
	c.StartReplica(victim.Replica, 0)
	to := time.Now().Add(8 * time.Second).Truncate(time.Second)
	SleepUntil(to.Add(2 * time.Second))
	c.Check(from, to)

	for _, r := range c.Runs() {
		if r.RunID == victim.RunID && !r.End.IsZero() {
			t.Errorf("the killed run %s has an end line (%s at %s): the kill did not take its job down", r.RunID, r.Outcome, stamp(r.End))
		}
	}
	restarted := 0
	for _, r := range RunsStartedIn(c.Runs(), kill.Add(2*time.Second), to) {
		if r.Replica == victim.Replica {
			restarted++
		}
	}
	t.Logf("killed %s during run %s (slot %s); after its restart it ran %d runs", victim.Replica, victim.RunID, slotString(victim), restarted)
}

// A replica's whole process tree is frozen (SIGSTOP) for two lock TTLs
// while it runs a long forbid job, then continued. The other replicas
// take over after the lease expires; no slot runs twice; the overlapping
// runs are told apart by fencing tokens, the later with the higher; the
// stale run is canceled (lock.lost, run.canceled lock_lost) soon after the
// replica wakes.
func scenarioReplicaFreeze(t *testing.T) {
	hold := JobDef{Name: "hold", Schedule: "* * * * * *", Sleep: 20 * time.Second, Forbid: true}
	c := NewCluster(t, bins, Spec{ProxyNode: -1, Jobs: []JobDef{tick, hold}})
	up := c.StartAll("r1", "r2", "r3")
	from := NextSecond(up).Add(time.Second)
	stale := c.WaitOpenRun("hold", 6*time.Second)
	time.Sleep(1500 * time.Millisecond) // a few watchdog renewals in
	f := c.Replica(stale.Replica).Freeze(2 * c.spec.TTL)
	c.Faults.Legit(c.Faults.Start(f.From), f.To.Add(c.spec.TTL+time.Second), "replica "+stale.Replica+" frozen")
	to := time.Now().Add(6 * time.Second).Truncate(time.Second)
	SleepUntil(to.Add(2 * time.Second))
	r := c.Check(from, to)

	var got *Run
	runs := c.Runs()
	for i := range runs {
		if runs[i].RunID == stale.RunID {
			got = &runs[i]
		}
	}
	switch {
	case got == nil:
		t.Errorf("stale run %s vanished from the ledger", stale.RunID)
	case got.End.IsZero():
		t.Errorf("stale run %s never ended", stale.RunID)
	case got.End.After(f.To.Add(2 * time.Second)):
		t.Errorf("stale run %s ended %v after %s woke (want < 2s)", stale.RunID, got.End.Sub(f.To).Round(time.Millisecond), stale.Replica)
	case got.Outcome != "canceled":
		t.Errorf("stale run %s ended %q, want canceled", stale.RunID, got.Outcome)
	default:
		t.Logf("stale run %s on %s canceled %v after waking", stale.RunID, stale.Replica, got.End.Sub(f.To).Round(time.Millisecond))
	}
	evs := c.Events()
	canceled, lost := false, false
	for _, e := range evs {
		if e.Replica != stale.Replica || e.Job != "hold" {
			continue
		}
		if e.Event == "run.canceled" && e.Reason == "lock_lost" && e.RunID == stale.RunID {
			canceled = true
		}
		if e.Event == "lock.lost" && !e.Time.Before(f.From) {
			lost = true
		}
	}
	if !canceled || !lost {
		t.Errorf("frozen replica %s logged lock.lost=%v, run.canceled reason lock_lost for run %s=%v; want both", stale.Replica, lost, stale.RunID, canceled)
	}
	// The scenario must have produced the overlap it is about: another
	// replica ran hold while the frozen one still "held" it.
	if r.ExcusedOverlaps == 0 {
		t.Errorf("no run of hold started while %s was frozen: the lease did not expire or nobody took over", stale.Replica)
	}
	for _, e := range r.Excused {
		t.Logf("excused: %s", e)
	}
}

// One Redis node of three dies for a while (no misses), then two of three
// die (no runs, every slot skipped no_quorum, no duplicates) and come back
// (runs resume from the next slot on). The nodes keep their data
// (append-only file), so fencing tokens must keep increasing.
func scenarioRedisDown(t *testing.T) {
	c := NewCluster(t, bins, Spec{ProxyNode: -1, AppendOnly: true, Jobs: []JobDef{tick, guard}})
	up := c.StartAll("r1", "r2", "r3")
	from := NextSecond(up).Add(time.Second)
	SleepUntil(from.Add(3 * time.Second))

	if err := c.Redis.Node(0).Kill(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(6 * time.Second)
	if err := c.Redis.Node(0).Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(4 * time.Second)

	down := time.Now()
	for _, i := range []int{1, 2} {
		if err := c.Redis.Node(i).Kill(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(5 * time.Second)
	// The nodes answer before Start returns: the outage ends, for the
	// checks below, when the first restart begins.
	restarting := time.Now()
	for _, i := range []int{1, 2} {
		if err := c.Redis.Node(i).Start(); err != nil {
			t.Fatal(err)
		}
	}
	back := time.Now()
	c.Faults.Legit(c.Faults.Start(down), back.Add(time.Second), "two of three Redis nodes down")
	to := time.Now().Add(6 * time.Second).Truncate(time.Second)
	SleepUntil(to.Add(2 * time.Second))
	c.Check(from, to)

	if rs := RunsStartedIn(c.Runs(), down.Add(500*time.Millisecond), restarting); len(rs) > 0 {
		for _, r := range rs {
			t.Errorf("run %s of %s slot %s on %s started at %s while two of three nodes were down",
				r.RunID, r.Job, slotString(r), r.Replica, stamp(r.Start))
		}
	}
	// Each slot of the outage is explained: some replica skipped it with
	// reason no_quorum, or — a slot still fresh when the quorum returned
	// (the replicas retry while slot + lateness has not passed) — it ran
	// once, after the restart and within the lateness bound (+1 s for the
	// acquisition).
	lateness := c.spec.lateness()
	runs := c.Runs()
	evs := c.Events()
	slots, _ := ExpectedSlots(tick.Schedule, down.Add(time.Second), back.Add(-500*time.Millisecond))
	for _, s := range slots {
		ok := false
		for _, e := range evs {
			if e.Job == "tick" && e.Slot == s.Format(time.RFC3339) && e.Event == "slot.skipped" && e.Reason == "no_quorum" {
				ok = true
			}
		}
		for _, r := range runs {
			if r.Job != "tick" || !r.Slot.Equal(s) {
				continue
			}
			if r.Start.Before(restarting) || r.Start.After(s.Add(lateness+time.Second)) {
				t.Errorf("tick slot %s of the quorum outage ran at %s: not after the restart (%s) within the lateness bound",
					s.Format(time.RFC3339), stamp(r.Start), stamp(restarting))
			}
			ok = true
		}
		if !ok {
			t.Errorf("tick slot %s during the quorum outage: neither skipped with reason no_quorum nor run after the quorum returned", s.Format(time.RFC3339))
		}
	}
}

// One node (behind the proxy) becomes slow below op_timeout, then above
// it, then unreachable (blackhole), then refuses connections, then
// executes every request but loses its answers (an asymmetric partition:
// claims, renewals and ends applied on a node the replicas count as
// failed), then holds every write for longer than a lock TTL (CLIENT
// PAUSE WRITE, as a failover or a managed service's maintenance does: it
// answers reads at once, and drops the claims, renewals and ends it held
// when their replicas time out and close the connections). A majority
// stays healthy throughout, so nothing may be missed or run twice.
func scenarioRedisSlow(t *testing.T) {
	c := NewCluster(t, bins, Spec{ProxyNode: 2, Jobs: []JobDef{tick, guard}})
	up := c.StartAll("r1", "r2", "r3")
	from := NextSecond(up).Add(time.Second)
	SleepUntil(from.Add(2 * time.Second))
	op := c.spec.OpTimeout
	pause := c.spec.TTL * 4 / 3 // longer than a lease: none on the node is renewed, and none expires
	lost, paused, full := &nodeFault{node: c.Redis.Node(2)}, &nodeFault{node: c.Redis.Node(2)}, &nodeFault{node: c.Redis.Node(2)}
	busy, scriptDone := &nodeFault{node: c.Redis.Node(2)}, make(chan error, 1)
	flushed, evalsBefore := &nodeFault{node: c.Redis.Node(2)}, int64(0)
	steps := []struct {
		what string
		do   func()
		d    time.Duration
	}{
		{fmt.Sprintf("latency %v each way (round trip below op_timeout %v)", op*3/10, op), func() { c.Proxy.SetLatency(op * 3 / 10) }, 5 * time.Second},
		{fmt.Sprintf("latency %v each way (above op_timeout)", op*3/2), func() { c.Proxy.SetLatency(op * 3 / 2) }, 5 * time.Second},
		{"blackhole", func() { c.Proxy.SetLatency(0); c.Proxy.SetMode(redistest.Blackhole) }, 5 * time.Second},
		{"healed", func() { c.Proxy.SetMode(redistest.Pass) }, 3 * time.Second},
		{"reject (connections reset)", func() { c.Proxy.SetMode(redistest.Reject) }, 4 * time.Second},
		{"healed", func() { c.Proxy.SetMode(redistest.Pass) }, 3 * time.Second},
		{"loses replies (requests executed, answers held)", func() { lost.begin(); c.Proxy.SetMode(redistest.LoseReplies) }, 5 * time.Second},
		{"healed", func() { lost.end(); c.Proxy.SetMode(redistest.Pass) }, 3 * time.Second},
		{fmt.Sprintf("writes paused for %v (CLIENT PAUSE WRITE; lock.ttl %v)", pause, c.spec.TTL), func() {
			paused.begin()
			if err := c.Redis.Node(2).PauseWrites(pause); err != nil {
				t.Fatal(err)
			}
		}, pause + 2*time.Second},
		{"out of memory (maxmemory reached, noeviction: every write refused with OOM, reads answered)", func() {
			full.begin()
			setMaxmemory(t, c.Redis.Node(2), "1")
		}, 4 * time.Second},
		{"memory back", func() { full.end(); setMaxmemory(t, c.Redis.Node(2), "0") }, 3 * time.Second},
		{"busy with another client's script for 4 s (every command held, then answered BUSY past 500 ms)", func() {
			busy.begin()
			go func() { scriptDone <- c.Redis.Node(2).BusyScript(4*time.Second, 500*time.Millisecond) }()
		}, 4 * time.Second},
		{"script over", func() {
			if err := <-scriptDone; err != nil {
				t.Fatal(err)
			}
			busy.end()
		}, 3 * time.Second},
		{"script cache flushed (SCRIPT FLUSH, as an operator or a failover to a node without the scripts)", func() {
			flushed.begin()
			evalsBefore = evalCalls(c.Redis.Node(2))
			flushScripts(t, c.Redis.Node(2))
		}, 3 * time.Second},
	}
	for _, s := range steps {
		t.Logf("%s: node %d %s", stamp(time.Now()), 2, s.what)
		s.do()
		time.Sleep(s.d)
	}
	paused.until = paused.from.Add(pause)
	to := time.Now().Truncate(time.Second)
	SleepUntil(to.Add(2 * time.Second))
	c.Check(from, to)
	// The two faults must have bitten: a fault the replicas never noticed
	// proves nothing. With replies lost the node still executed requests.
	evs := c.Events()
	lost.requireSeen(t, evs, "losing replies")
	paused.requireSeen(t, evs, "pausing writes")
	full.requireSeen(t, evs, "out of memory")
	busy.requireSeen(t, evs, "busy with a script")
	flushed.end()
	flushed.requireUnseen(t, evs, "script cache flushed")
	if evals := evalCalls(c.Redis.Node(2)) - evalsBefore; evals < 1 || evalsBefore < 0 {
		t.Errorf("node 2 ran %d scripts sent with their source after its cache was flushed: the flush did not bite", evals)
	} else {
		t.Logf("node 2 ran %d scripts sent with their source after its cache was flushed", evals)
	}
	if lost.executed < 10 {
		t.Errorf("node 2 processed %d commands while its replies were lost: the requests did not reach it", lost.executed)
	} else {
		t.Logf("node 2 processed %d commands while its replies were lost", lost.executed)
	}
}

// Replica clocks offset by +0.8, -0.8 and 0 times lock.max_clock_skew
// (SLOTLOCK_CLOCK_OFFSET): still exactly once. The two offset replicas
// are beyond half the bound from the nodes' clocks, so 1.6 × it apart:
// each says so at its start (clock.off, its offset measured against the
// Redis nodes' TIME), the third does not.
func scenarioClockOffsets(t *testing.T) {
	c := NewCluster(t, bins, Spec{ProxyNode: -1, Jobs: []JobDef{tick, guard, five}})
	skew := c.spec.Skew
	c.StartReplica("r1", skew*8/10)
	c.StartReplica("r2", -skew*8/10)
	c.StartReplica("r3", 0)
	up := time.Now()
	from := NextSecond(up).Add(2 * time.Second)
	to := from.Add(19 * time.Second)
	SleepUntil(to.Add(2 * time.Second))
	r := c.Check(from, to)
	if r.Ran != r.Slots {
		t.Errorf("clock offsets: %d of %d slots ran", r.Ran, r.Slots)
	}
	logSpread(t, c.Runs())
	for name, want := range map[string]time.Duration{"r1": skew * 8 / 10, "r2": -skew * 8 / 10, "r3": 0} {
		off := c.LogLines(name, "clock.off")
		if want == 0 {
			if len(off) != 0 {
				t.Errorf("%s, its clock right, logged clock.off: %v", name, off)
			}
			continue
		}
		if len(off) != 1 {
			t.Errorf("%s, its clock %v off, logged clock.off %d times, want once", name, want, len(off))
			continue
		}
		ms, _ := strconv.ParseFloat(str(off[0]["offset_ms"]), 64)
		got := time.Duration(ms) * time.Millisecond
		if (got-want).Abs() > 50*time.Millisecond || str(off[0]["level"]) != "WARN" {
			t.Errorf("%s: clock.off %v, want a warning of an offset of %v", name, off[0], want)
		}
		t.Logf("%s (clock %v): clock.off offset %v ± %s ms", name, want, got, str(off[0]["uncertainty_ms"]))
	}
}

// A 2.5 s job every second with overlap: forbid: runs never overlap,
// tokens strictly increase, every slot runs or is skipped with reason
// overlap while a run goes on.
func scenarioLongJob(t *testing.T) {
	long := JobDef{Name: "long", Schedule: "* * * * * *", Sleep: 2500 * time.Millisecond, Forbid: true}
	c := NewCluster(t, bins, Spec{ProxyNode: -1, Jobs: []JobDef{long}})
	up := c.StartAll("r1", "r2", "r3")
	from := NextSecond(up).Add(time.Second)
	to := from.Add(19 * time.Second)
	SleepUntil(to.Add(3 * time.Second))
	r := c.Check(from, to)
	// A run every three seconds or so: at least five in 20 s.
	if r.Ran < 5 {
		t.Errorf("long job ran %d times in 20 s, want >= 5 (a 2.5 s run every ~3 s)", r.Ran)
	}
	if r.Overlaps != 0 || r.ExcusedOverlaps != 0 {
		t.Errorf("overlaps %d (excused %d), want none without faults", r.Overlaps, r.ExcusedOverlaps)
	}
}

// A rolling restart like a Container Apps revision change: a new replica
// starts, then an old one gets SIGTERM, one by one. Each old replica exits
// 0 within shutdown.grace; no slot runs twice or is missed.
func scenarioRollingRestart(t *testing.T) {
	c := NewCluster(t, bins, Spec{ProxyNode: -1, Jobs: []JobDef{tick, guard, five}})
	up := c.StartAll("r1", "r2", "r3")
	from := NextSecond(up).Add(time.Second)
	SleepUntil(from.Add(3 * time.Second))
	for i, old := range []string{"r1", "r2", "r3"} {
		c.StartReplica(fmt.Sprintf("rev2-%d", i+1), 0)
		time.Sleep(1500 * time.Millisecond)
		d, code := c.Replica(old).Stop()
		t.Logf("%s: SIGTERM %s: exit %d after %v", stamp(time.Now()), old, code, d.Round(time.Millisecond))
		time.Sleep(1500 * time.Millisecond)
	}
	to := time.Now().Add(3 * time.Second).Truncate(time.Second)
	SleepUntil(to.Add(2 * time.Second))
	r := c.Check(from, to)
	if r.Ran != r.Slots {
		t.Errorf("rolling restart: %d of %d slots ran", r.Ran, r.Slots)
	}
}

// All replicas are down for a gap (SIGTERM, each exits 0), then come back.
// Jobs with misfire run_once and a deadline covering the gap run the
// latest missed slot exactly once (misfire.recovered); a misfire: skip job
// runs none of the gap's slots. Short mode uses a 16 s gap, the soak a
// minute (TestSoakGap).
func scenarioGap(t *testing.T, gapLen time.Duration) {
	deadline := gapLen + time.Minute
	every1 := JobDef{Name: "every1", Schedule: "* * * * * *", Sleep: 200 * time.Millisecond, Misfire: "run_once", Deadline: deadline}
	every5 := JobDef{Name: "every5", Schedule: "*/5 * * * * *", Sleep: 200 * time.Millisecond, Misfire: "run_once", Deadline: deadline}
	skip5 := JobDef{Name: "skip5", Schedule: "*/5 * * * * *", Sleep: 200 * time.Millisecond, Misfire: "skip"}
	c := NewCluster(t, bins, Spec{ProxyNode: -1, Jobs: []JobDef{every1, every5, skip5}})
	up := c.StartAll("r1", "r2", "r3")
	from := NextSecond(up).Add(time.Second)
	SleepUntil(from.Add(5 * time.Second))

	stop := time.Now()
	c.StopAll()
	// Come back 0.3 s past a whole second, gapLen later, so "the latest
	// missed slot" is not ambiguous for the every-second job.
	upAgain := NextSecond(stop.Add(gapLen)).Add(300 * time.Millisecond)
	SleepUntil(upAgain)
	c.StartAll("r1", "r2", "r3")
	allUp := time.Now()
	c.Faults.Legit(c.Faults.Start(stop), upAgain.Add(time.Second), "all replicas down")
	to := time.Now().Add(6 * time.Second).Truncate(time.Second)
	SleepUntil(to.Add(2 * time.Second))
	c.Check(from, to)

	runs := c.Runs()
	evs := c.Events()
	if allUp.Sub(upAgain) > 700*time.Millisecond {
		t.Logf("replicas took %v to start; the latest missed slot may be ambiguous", allUp.Sub(upAgain))
	}
	for _, j := range []JobDef{every1, every5, skip5} {
		// The gap: slots after the last one that fired before the stop
		// and ran (it may have started just after SIGTERM: a replica
		// finishes what it acquired), before the replicas came back.
		var last time.Time
		for _, r := range runs {
			if r.Job == j.Name && !r.Slot.After(stop) && r.Slot.After(last) {
				last = r.Slot
			}
		}
		gap, _ := ExpectedSlots(j.Schedule, last.Add(time.Second), upAgain)
		if len(gap) < 2 {
			t.Fatalf("%s: gap %s..%s has %d slots; the scenario needs at least 2", j.Name, stamp(last), stamp(upAgain), len(gap))
		}
		latest := gap[len(gap)-1]
		var ran []Run
		for _, r := range runs {
			if r.Job == j.Name && r.Slot.After(last) && r.Slot.Before(upAgain) {
				ran = append(ran, r)
			}
		}
		recovered := 0
		for _, e := range EventsOf(evs, "misfire.recovered", j.Name) {
			recovered++
			t.Logf("%s: misfire.recovered slot %s on %s", j.Name, e.Slot, e.Replica)
		}
		if j.Misfire != "run_once" {
			if len(ran) != 0 || recovered != 0 {
				t.Errorf("%s (misfire skip): %d runs of gap slots, %d misfire.recovered; want none", j.Name, len(ran), recovered)
			}
			continue
		}
		switch {
		case len(ran) != 1:
			var s []string
			for _, r := range ran {
				s = append(s, slotString(r)+" on "+r.Replica)
			}
			t.Errorf("%s (run_once): %d runs of the %d gap slots (%s..%s): %v; want exactly one, the latest (%s)",
				j.Name, len(ran), len(gap), gap[0].Format(time.RFC3339), latest.Format(time.RFC3339), s, latest.Format(time.RFC3339))
		case !ran[0].Slot.Equal(latest):
			t.Errorf("%s (run_once): recovered slot %s, want the latest missed slot %s", j.Name, slotString(ran[0]), latest.Format(time.RFC3339))
		default:
			t.Logf("%s: gap of %d slots; latest %s ran once on %s", j.Name, len(gap), latest.Format(time.RFC3339), ran[0].Replica)
		}
		if recovered != 1 {
			t.Errorf("%s (run_once): %d misfire.recovered lines, want 1", j.Name, recovered)
		}
	}
}

// `slotlock trigger` runs a manual slot under the same locks: refused
// (exit 1) while a scheduled run of an overlap: forbid job goes on, run
// (exit 0) when none does, with a fencing token above every earlier run's
// and below every later one's, and never overlapping a scheduled run.
func scenarioTrigger(t *testing.T) {
	slow := JobDef{Name: "slow", Schedule: "*/6 * * * * *", Sleep: 2 * time.Second, Forbid: true}
	c := NewCluster(t, bins, Spec{ProxyNode: -1, Jobs: []JobDef{slow}})
	up := c.StartAll("r1", "r2", "r3")
	from := NextSecond(up).Add(time.Second)

	open := c.WaitOpenRun("slow", 8*time.Second)
	if code := c.Trigger("slow"); code != 1 {
		t.Errorf("trigger while run %s (slot %s) goes on: exit %d, want 1 (overlap: forbid)", open.RunID, slotString(open), code)
	}
	// Between scheduled runs: the last one ended, the next slot is >= 3 s away.
	for {
		now := time.Now()
		if now.Unix()%6 == 3 && now.Sub(now.Truncate(time.Second)) < 300*time.Millisecond {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code := c.Trigger("slow"); code != 0 {
		t.Errorf("trigger between runs: exit %d, want 0", code)
	}
	to := time.Now().Add(7 * time.Second).Truncate(time.Second)
	SleepUntil(to.Add(3 * time.Second))
	r := c.Check(from, to)

	var manual []Run
	for _, run := range c.Runs() {
		if run.Manual {
			manual = append(manual, run)
		}
	}
	if len(manual) != 1 {
		t.Fatalf("manual runs in the ledger: %d, want 1 (the refused trigger must not run)", len(manual))
	}
	m := manual[0]
	if m.Replica != "trigger" || m.Outcome != "ok" {
		t.Errorf("manual run: replica %q outcome %q, want trigger/ok", m.Replica, m.Outcome)
	}
	t.Logf("manual run %s token %d; checker: %d token violations, %d overlaps", m.RunID, m.Token, r.TokenViolations, r.Overlaps)
}

// logSpread logs how many runs each replica made.
func logSpread(t *testing.T, runs []Run) {
	n := map[string]int{}
	for _, r := range runs {
		n[r.Replica]++
	}
	t.Logf("runs per replica: %v", n)
}

// Issue #10, hole 1: lock.ttl 3s, max_clock_skew 1s, a job every 10 s whose
// run takes 3 s. The replica running a slot is SIGKILLed 1.5 s into the
// run (after its first renewal, at 1 s, confirmed that the run started:
// issue #21) and restarted 1 s later, as Container Apps restarts a crashed
// replica. The slot must never start again (the restarted replica's
// start-up check used to run it a second time under run_once), and the
// dead run is reported exactly once (run.abandoned, with its run id).
func scenarioCrashRestart(t *testing.T, misfire string) {
	crash := JobDef{Name: "crash", Schedule: "*/10 * * * * *", Sleep: 3 * time.Second, Forbid: true,
		Misfire: misfire, Deadline: time.Minute}
	c := NewCluster(t, bins, Spec{ProxyNode: -1, TTL: 3 * time.Second, Skew: time.Second, Jobs: []JobDef{crash}})
	up := c.StartAll("r1", "r2", "r3")
	from := NextSecond(up).Add(time.Second)
	victim := c.WaitOpenRun("crash", 15*time.Second)
	SleepUntil(victim.Start.Add(1500 * time.Millisecond))
	kill := time.Now()
	c.Replica(victim.Replica).Kill()
	c.Faults.Legit(c.Faults.Start(kill), kill.Add(c.spec.TTL+time.Second), "replica "+victim.Replica+" SIGKILLed mid-run")
	time.Sleep(time.Second)
	c.StartReplica(victim.Replica, 0)
	to := victim.Slot.Add(20 * time.Second)
	SleepUntil(to.Add(2 * time.Second))
	c.Check(from, to)

	starts := 0
	for _, r := range c.Runs() {
		if r.Job == "crash" && r.Slot.Equal(victim.Slot) {
			starts++
		}
	}
	if starts != 1 {
		t.Errorf("slot %s of the killed run started %d times", slotString(victim), starts)
	}
	var reports []Event
	for _, e := range EventsOf(c.Events(), "run.abandoned", "crash") {
		if e.Slot == slotString(victim) {
			reports = append(reports, e)
		}
	}
	if len(reports) != 1 || reports[0].RunID != victim.RunID || reports[0].Holder != victim.Replica {
		t.Errorf("run.abandoned for the killed run %s on %s: %+v, want exactly one naming it", victim.RunID, victim.Replica, reports)
	}
}

// pause_kill_history (issue 14): three replicas; `slotlock pause --for 5s`
// on a job, then a replica is SIGKILLed and restarted. `slotlock history`
// then accounts for every slot of the window with exactly one entry, and
// each entry agrees with the logs: a run's end line for a run, the skip
// lines for a paused slot, run.abandoned for the killed run, one
// slot.missed for a missed slot.
func scenarioPauseKillHistory(t *testing.T) {
	c := NewCluster(t, bins, Spec{ProxyNode: -1, Jobs: []JobDef{tick},
		ReconcileEvery: time.Second, ReconcileAfter: 3 * time.Second})
	up := c.StartAll("r1", "r2", "r3")
	from := NextSecond(up).Add(time.Second)
	SleepUntil(from.Add(3 * time.Second))

	if out, code := c.Command("pause", "--for", "5s", "--reason", "e2e pause", "tick"); code != 0 {
		t.Fatalf("slotlock pause: exit %d: %s", code, out)
	}
	paused := time.Now()
	SleepUntil(paused.Add(6 * time.Second))
	victim := c.WaitOpenRun("tick", 5*time.Second)
	kill := time.Now()
	c.Replica(victim.Replica).Kill()
	c.Faults.Legit(c.Faults.Start(kill), kill.Add(c.spec.TTL+time.Second), "replica "+victim.Replica+" SIGKILLed")
	time.Sleep(2 * time.Second)
	c.StartReplica(victim.Replica, 0)
	to := time.Now().Add(5 * time.Second).Truncate(time.Second)
	// The reconciler judges a slot 3 s (plus lateness) after it, every second.
	SleepUntil(to.Add(8 * time.Second))

	out, code := c.Command("history", "--json", "--limit", "1000", "--since", from.Add(-time.Second).Format(time.RFC3339), "tick")
	if code != 0 {
		t.Fatalf("slotlock history: exit %d: %s", code, out)
	}
	var doc struct {
		Entries []struct {
			Slot, Outcome, Reason, Replica string
			RunID                          string `json:"run_id"`
		} `json:"entries"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("history --json: %v: %s", err, out)
	}
	c.Check(from, to)
	evs := c.Events()
	bySlot := map[string]int{}
	counts := map[string]int{}
	for _, e := range doc.Entries {
		bySlot[e.Slot]++
		counts[e.Outcome]++
		has := func(event string, match func(Event) bool) bool {
			for _, ev := range EventsOf(evs, event, "tick") {
				if ev.Slot == e.Slot && match(ev) {
					return true
				}
			}
			return false
		}
		ok := true
		switch e.Outcome {
		case "succeeded", "failed", "canceled":
			ok = has("run."+e.Outcome, func(ev Event) bool { return ev.RunID == e.RunID && ev.Replica == e.Replica })
		case "skipped":
			ok = has("slot.skipped", func(ev Event) bool { return ev.Reason == e.Reason })
		case "abandoned":
			ok = has("run.abandoned", func(ev Event) bool { return ev.RunID == e.RunID })
		case "missed":
			n := 0
			for _, ev := range EventsOf(evs, "slot.missed", "tick") {
				if ev.Slot == e.Slot && ev.Reason == e.Reason {
					n++
				}
			}
			ok = n == 1
		default:
			ok = false
		}
		if !ok {
			t.Errorf("history entry %+v has no matching log line", e)
		}
	}
	for sl := from; !sl.After(to); sl = sl.Add(time.Second) {
		if n := bySlot[sl.UTC().Format(time.RFC3339)]; n != 1 {
			t.Errorf("slot %s: %d history entries, want 1", sl.UTC().Format(time.RFC3339), n)
		}
	}
	if counts["skipped"] < 4 {
		t.Errorf("%d slots skipped for the 5 s pause, want at least 4", counts["skipped"])
	}
	t.Logf("history of %s..%s: %v; killed %s during run %s", stamp(from), stamp(to), counts, victim.Replica, victim.RunID)
}
