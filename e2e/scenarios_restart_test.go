//go:build linux

package e2e

import (
	"fmt"
	"testing"
	"time"
)

// Scenarios of replicas restarted: one by one (a revision change), all
// of them after a gap, one crashed and restarted.

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
