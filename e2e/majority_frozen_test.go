package e2e

import (
	"testing"
	"time"
)

// Two of three Redis nodes frozen (SIGSTOP) for 9 s, the replicas' clocks
// apart. While they are frozen a done marker on the live node refuses a
// claim alone, and requests queued on the frozen nodes run when they
// resume; each replica ends the outage with its own latest missed slot,
// at its own time. A misfire: run_once job runs one slot of the outage,
// once — a slot nobody ran on time — and a misfire: skip job none: two
// recoveries of one outage were a hole in run_once (a refusal one node
// gave ended the outage early; the first replica to decide did not wait
// for the others to note their later slots).
//
// Both jobs forbid overlap: at the resume the claims queued on the frozen
// nodes and the retries answer together, and two runs of an overlap:
// allow job whose claims were in flight at once may start a few
// milliseconds out of token order (docs/guarantees.md); under forbid the
// job lease orders them.
func scenarioMajorityFrozenRunOnce(t *testing.T) {
	once := JobDef{Name: "once", Schedule: "* * * * * *", Sleep: 200 * time.Millisecond, Forbid: true,
		Misfire: "run_once", Deadline: time.Minute}
	c := NewCluster(t, bins, Spec{ProxyNode: -1, Jobs: []JobDef{once, guard}})
	fast := c.spec.Skew * 8 / 10
	c.StartReplica("r1", fast)
	c.StartReplica("r2", -fast)
	c.StartReplica("r3", 0)
	from := NextSecond(time.Now()).Add(2 * time.Second)
	SleepUntil(from.Add(3 * time.Second))

	frozen := time.Now()
	for _, i := range []int{1, 2} {
		if err := c.Redis.Node(i).Pause(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(9 * time.Second)
	for _, i := range []int{1, 2} {
		if err := c.Redis.Node(i).Resume(); err != nil {
			t.Fatal(err)
		}
	}
	back := time.Now()
	// From a second after the resume every slot runs: requests that ran
	// late on the resumed nodes hold no slot (their senders undid them).
	c.Faults.Legit(c.Faults.Start(frozen), back.Add(time.Second), "two of three Redis nodes frozen")
	// The recovery waits until every replica could have tried the slots
	// due by the resume (max_clock_skew + lateness + about a second), and
	// a slot that looks held is tried again every lock.ttl/3.
	to := back.Add(12 * time.Second).Truncate(time.Second)
	SleepUntil(to.Add(2 * time.Second))
	c.Check(from, to)

	runs := c.Runs()
	evs := c.Events()
	if rc := EventsOf(evs, "misfire.recovered", guard.Name); len(rc) != 0 {
		t.Errorf("misfire.recovered for the misfire: skip job: %v", rc)
	}
	// The outage is reported as one: a slot lost to the frozen nodes is
	// skipped no_quorum. late is a replica's own overload (a slot shed, or
	// its queue to the nodes full), and these replicas run two jobs: calls
	// held behind a frozen node's pipeline were once answered as the
	// replica's queue being full, and the outage's slots logged late.
	for _, e := range EventsOf(evs, "slot.skipped", guard.Name) {
		if e.Reason == "late" && e.Time.After(frozen) && e.Time.Before(back) {
			t.Errorf("%s skipped slot %s late during the outage (%s .. %s), not no_quorum: %s",
				e.Replica, e.Slot, stamp(frozen), stamp(back), e.Error)
		}
	}
	rc := EventsOf(evs, "misfire.recovered", once.Name)
	for _, e := range rc {
		t.Logf("misfire.recovered slot %s on %s", e.Slot, e.Replica)
	}
	if len(rc) != 1 {
		t.Fatalf("%d misfire.recovered lines for the run_once job, want 1 for the outage %s .. %s", len(rc), stamp(frozen), stamp(back))
	}
	sl, err := time.Parse(time.RFC3339, rc[0].Slot)
	if err != nil {
		t.Fatal(err)
	}
	// Every replica tried it inside the outage: the fastest clock fires it
	// fast early, the slowest fast late.
	if sl.Add(-fast).Before(frozen) || sl.Add(fast).After(back) {
		t.Errorf("recovered slot %s was not missed by every replica (outage %s .. %s)", rc[0].Slot, stamp(frozen), stamp(back))
	}
	n := 0
	for _, r := range runs {
		if r.Job == once.Name && r.Slot.Equal(sl) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("recovered slot %s ran %d times", rc[0].Slot, n)
	}
}
