//go:build linux

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// redis_clock_step: each node's wall clock in turn stepped forward by two
// lock TTLs for 2.5 s, then back to the real time, then back by two TTLs
// for 2.5 s — a bad time source, a VM resumed from a snapshot — each time
// 1.5 s into a forbid job's 3.5 s run whose claim every node holds. Forward, the
// node ends at once every lease and job lease it holds and its scripts
// judge every claim there expired (and a manual run of the job, asked
// for then, is refused: the job lease is live on the other two); back, it
// keeps what it set meanwhile late. The other two keep the right time (one fault at a time), so
// nothing may run twice, nothing be missed, and no run be reported
// abandoned (the checker's log check: a run.abandoned for a run that
// ended on a replica neither frozen nor killed is a phantom outcome). The
// scenario fails if a node's TIME did not move with its step (a fault
// that does nothing).
func scenarioRedisClockStep(t *testing.T) {
	spans := JobDef{Name: "spans", Schedule: "*/5 * * * * *", Sleep: 3500 * time.Millisecond, Forbid: true}
	c := NewCluster(t, bins, Spec{ProxyNode: -1, SteppableClocks: true, Jobs: []JobDef{tick, guard, spans}})
	up := c.StartAll("r1", "r2", "r3")
	from := NextSecond(up).Add(time.Second)
	ttl := c.spec.TTL
	for i := range 3 {
		n := c.Redis.Node(i)
		for _, step := range []time.Duration{2 * ttl, -2 * ttl} {
			claimedEverywhere(t, c, "spans")
			if err := n.StepClock(step); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			now, err := n.Client().Time(ctx).Result()
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			if off := now.Sub(time.Now()); (off - step).Abs() > time.Second {
				t.Fatalf("node %d stepped %v: its TIME is %v off the real clock", i, step, off)
			}
			stepped := time.Now()
			if step > 0 {
				// The run's job lease is gone on this node and live on the
				// other two: a manual run is refused (overlap: forbid).
				if code := c.Trigger("spans"); code != 1 {
					t.Errorf("node %d stepped %v: trigger of spans while its run goes on: exit %d, want 1", i, step, code)
				}
			}
			time.Sleep(2500*time.Millisecond - time.Since(stepped))
			if err := n.StepClock(0); err != nil {
				t.Fatal(err)
			}
		}
	}
	to := time.Now().Add(4 * time.Second).Truncate(time.Second)
	SleepUntil(to.Add(2 * time.Second))
	c.Check(from, to)
}

// claimedEverywhere waits until 1.5 s into a slot of job (every 5 s)
// whose run's claim every node holds, trying three slots. The guarantee's
// condition: a claim that reached a bare majority (a race — replicas
// started together may not yet see each other and all fire the first
// slots — or a node whose request went out late) is spread to the third node by
// its first renewal, within a second of its start; before that, a step of
// one of its two nodes leaves it live on one node only, and its run is
// canceled (lock.lost), as docs/guarantees.md says of a stepped clock.
func claimedEverywhere(t *testing.T, c *Cluster, job string) {
	t.Helper()
	for range 3 {
		slot := time.Now().Truncate(5 * time.Second).Add(5 * time.Second)
		SleepUntil(slot.Add(1500 * time.Millisecond))
		field := fmt.Sprintf("slotlock:{%s}:claims slot:%d", job, slot.Unix())
		on := 0
		for i := range 3 {
			if claimFields(t, c.Redis.Node(i))[field] {
				on++
			}
		}
		if on == 3 {
			return
		}
		t.Logf("the claim of %s's slot %s is on %d of 3 nodes: waiting for the next slot", job, slot.Format("15:04:05"), on)
	}
	t.Fatalf("no run of %s in three slots had its claim on every node", job)
}
