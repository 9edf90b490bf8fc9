//go:build linux

package e2e

import (
	"testing"
	"time"
)

// A replica's log output stops being read for four lock TTLs while it
// runs a forbid job (a log driver's backpressure: its every write to
// stdout and stderr blocks), then drains again. Once its output has made
// no progress for half a TTL the replica is unfit: its leases lapse and
// the others run the job's slots for the rest of the stall — before, the
// blocked replica's watchdog kept the job lease and the whole fleet
// skipped every slot of the job as overlap for as long as the stall
// lasted. Its lines are written, late, once the output drains.
func scenarioLogStall(t *testing.T) {
	c := NewCluster(t, bins, Spec{ProxyNode: -1, PipedLogs: true, Jobs: []JobDef{tick, guard}})
	up := c.StartAll("r1", "r2", "r3")
	from := NextSecond(up).Add(time.Second)
	SleepUntil(from.Add(3 * time.Second))
	victim := c.WaitOpenRun("guard", 5*time.Second)
	at := time.Now()
	// Its runs and claims until it is unfit (half a TTL), and their leases
	// until they lapse (a TTL after their last renewal), may go unrun.
	c.Faults.Legit(c.Faults.Start(at), at.Add(c.spec.TTL/2+c.spec.TTL+time.Second), "replica "+victim.Replica+"'s log output blocked")
	s := c.Replica(victim.Replica).StallLogs(4 * c.spec.TTL)
	t.Logf("stalled %s's log output from %s to %s", victim.Replica, stamp(s.From), stamp(s.To))
	to := time.Now().Add(6 * time.Second).Truncate(time.Second)
	SleepUntil(to.Add(2 * time.Second))
	c.Check(from, to)
}
