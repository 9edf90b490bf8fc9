//go:build linux

package e2e

import (
	"encoding/json"
	"testing"
	"time"
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
		{"replica_sigkill", scenarioReplicaKill},                          // scenarios_replica_test.go
		{"replica_freeze", scenarioReplicaFreeze},                         // scenarios_replica_test.go
		{"redis_nodes_down", scenarioRedisDown},                           // scenarios_redis_test.go
		{"redis_slow_unreachable", scenarioRedisSlow},                     // scenarios_redis_test.go
		{"redis_failover", scenarioRedisFailover},                         // failover_test.go
		{"redis_clock_step", scenarioRedisClockStep},                      // clockstep_test.go
		{"split_views", scenarioSplitViews},                               // splitviews_test.go
		{"redis_majority_frozen_run_once", scenarioMajorityFrozenRunOnce}, // majority_frozen_test.go
		{"clock_offsets", scenarioClockOffsets},                           // scenarios_replica_test.go
		{"long_job_forbid", scenarioLongJob},
		{"rolling_restart", scenarioRollingRestart},                                      // scenarios_restart_test.go
		{"all_down_gap_run_once", func(t *testing.T) { scenarioGap(t, 16*time.Second) }}, // scenarios_restart_test.go
		{"manual_trigger_forbid", scenarioTrigger},
		{"crash_restart_run_once", func(t *testing.T) { scenarioCrashRestart(t, "run_once") }}, // scenarios_restart_test.go
		{"crash_restart_skip", func(t *testing.T) { scenarioCrashRestart(t, "skip") }},         // scenarios_restart_test.go
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
