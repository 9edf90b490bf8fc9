//go:build linux

package e2e

import (
	"testing"
	"time"
)

// A replica starved of CPU — a container whose quota is a tenth of a core,
// stopped by the kernel for 90 ms of every 100 ms period — for four lock
// TTLs, while it runs a forbid job and claims its share of slots: it is
// slow, not gone. Its claims and renewals take several periods each, but
// a period is far shorter than a lease, so nothing lapses, nothing may be
// missed and nothing run twice; the checker holds that without a fault
// window. (Tried harsher: 10 ms of every 300 ms held too. A stop of the
// order of the lease is a freeze: scenario replica_freeze.)
func scenarioCPUThrottle(t *testing.T) {
	c := NewCluster(t, bins, Spec{ProxyNode: -1, Jobs: []JobDef{tick, guard, five}})
	up := c.StartAll("r1", "r2", "r3")
	from := NextSecond(up).Add(time.Second)
	SleepUntil(from.Add(2 * time.Second))
	victim := c.WaitOpenRun("guard", 5*time.Second)
	at := time.Now()
	c.Replica(victim.Replica).Throttle(4*c.spec.TTL, 10*time.Millisecond, 90*time.Millisecond)
	t.Logf("throttled %s to 10 ms of every 100 ms from %s to %s", victim.Replica, stamp(at), stamp(time.Now()))
	to := time.Now().Add(4 * time.Second).Truncate(time.Second)
	SleepUntil(to.Add(2 * time.Second))
	c.Check(from, to)
}
