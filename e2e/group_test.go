//go:build linux

package e2e

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redlock"
)

// TestGroupLimitUnderFaults (issue 37): three replicas on real Redis run
// four every-second jobs (overlap forbid, 1.5 s runs) in a concurrency
// group of limit 2, while a replica holding a permit is SIGKILLed, one is
// frozen (SIGSTOP/SIGCONT) past its lease, and another is SIGKILLed. Never
// more than 2 bodies run at once (from the ledger's run intervals; a
// frozen replica's stale run counts until its freeze, the contract's one
// exception). Slots that find the group full are skipped group_full and
// logged so (the checker counts them explained). No permit leaks: after
// the last fault the group runs at its full limit again, and once the
// replicas are stopped both permits can be taken on the nodes.
func TestGroupLimitUnderFaults(t *testing.T) {
	requireSuite(t)
	var jobs []JobDef
	inGroup := map[string]bool{}
	for _, name := range []string{"g1", "g2", "g3", "g4"} {
		jobs = append(jobs, JobDef{Name: name, Schedule: "* * * * * *", Sleep: 1500 * time.Millisecond, Group: "heavy", Forbid: true})
		inGroup[name] = true
	}
	c := NewCluster(t, bins, Spec{ProxyNode: -1, Jobs: jobs,
		Groups: []map[string]any{{"name": "heavy", "limit": 2}}})
	if out, code := c.Command("validate"); code != 0 {
		t.Fatalf("slotlock validate: exit %d: %s", code, out)
	}
	ttl := c.spec.TTL
	up := c.StartAll("r1", "r2", "r3")
	from := NextSecond(up).Add(time.Second)
	SleepUntil(from.Add(4 * time.Second))

	// A permit holder killed: its permit is free again at its TTL.
	killAndRestart := func(exclude string) {
		victim := c.WaitOpenRun("", 5*time.Second)
		for victim.Replica == exclude {
			time.Sleep(100 * time.Millisecond)
			victim = c.WaitOpenRun("", 5*time.Second)
		}
		at := time.Now()
		c.Replica(victim.Replica).Kill()
		c.Faults.Legit(c.Faults.Start(at), at.Add(ttl+time.Second), "replica "+victim.Replica+" SIGKILLed holding a permit")
		time.Sleep(2 * time.Second)
		c.StartReplica(victim.Replica, 0)
	}
	killAndRestart("")

	// A permit holder frozen past its lease: the others take its permit;
	// it cancels its stale run on waking.
	time.Sleep(3 * time.Second)
	stale := c.WaitOpenRun("", 5*time.Second)
	f := c.Replica(stale.Replica).Freeze(2 * ttl)
	c.Faults.Legit(c.Faults.Start(f.From), f.To.Add(ttl+time.Second), "replica "+stale.Replica+" frozen")

	time.Sleep(2 * time.Second)
	killAndRestart(stale.Replica)
	lastFault := time.Now()

	// After the last fault and a TTL: the group at its full limit again.
	full := lastFault.Add(ttl + 2*time.Second)
	to := full.Add(8 * time.Second).Truncate(time.Second)
	SleepUntil(to.Add(3 * time.Second))
	c.StopAll()

	in := c.Input(from, to)
	spans := GroupSpans(c.Runs(), inGroup, in.Kills, in.Freezes, in.Now, 2*time.Second)
	most, at := MostAtOnce(spans, from, to.Add(2*time.Second))
	if most > 2 {
		t.Errorf("%d runs of the group at once at %s, limit 2", most, stamp(at))
	}
	if most, _ := MostAtOnce(spans, full, to); most != 2 {
		t.Errorf("after the last fault (%s..%s) at most %d runs at once, want the full limit 2: a permit leaked?", stamp(full), stamp(to), most)
	}
	ranAfter := 0
	for _, s := range spans {
		if !s.Start.Before(full) && s.Start.Before(to) {
			ranAfter++
		}
	}
	// Two permits, 1.5 s runs, a few hundred ms between a permit's end
	// and its next taker: about 9 runs in 8 s; 6 leaves room for a slow
	// host.
	if ranAfter < 6 {
		t.Errorf("%d runs in the 8 s after the last fault, want at least 6 (two permits in use)", ranAfter)
	}
	skipped := 0
	for _, e := range c.Events() {
		if e.Event == "slot.skipped" && e.Reason == "group_full" {
			skipped++
		}
	}
	if skipped == 0 {
		t.Error("no slot.skipped group_full: four jobs never waited for two permits?")
	}

	r := c.Check(from, to)
	if r.GroupFullSkipped == 0 {
		t.Errorf("the checker counted no group_full skip: %s", r)
	}
	t.Logf("%s; %d group_full skips logged, %d runs after the last fault, %d at most at once", r, skipped, ranAfter, most)

	// Nothing holds a permit once every replica stopped.
	lk, err := redlock.New(redlock.Config{Nodes: c.Redis.Addrs(), OpTimeout: 500 * time.Millisecond},
		locking.Options{Replica: "checker", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	sem := locking.Semaphore{Name: "heavy", Limit: 2}
	for i := range 2 {
		if _, err := sem.Acquire(context.Background(), lk, time.Second, i); err != nil {
			t.Errorf("permit %d after the replicas stopped: %v", i, err)
		}
	}
}
