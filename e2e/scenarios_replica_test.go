//go:build linux

package e2e

import (
	"strconv"
	"testing"
	"time"
)

// Scenarios of a replica killed or frozen, and of replicas whose clocks
// are apart.

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
