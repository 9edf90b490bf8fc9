//go:build linux

package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking/redistest"
)

// Scenarios of Redis nodes down, slow and unreachable.

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
