//go:build linux

package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking/redistest"
)

// redis_failover: each node in turn fails over to a replica that lagged —
// it runs on for 3 s after a checkpoint of its append-only file, is
// killed, and is back 300 ms later from the checkpoint, as a managed
// cache whose promoted replica had not received the primary's last
// writes. What it took in those seconds is lost there, and what it
// deleted is back: the claims of the runs that ended meanwhile, with
// their leases, a forbid job's released job leases, the fencing counter
// lower. The other two nodes keep everything (but a claim split by a
// race, on the failed node and one other only: outside the guarantee,
// docs/guarantees.md, and rare with one primary candidate per slot), so
// nothing may run twice, nothing be missed, and no claim brought back
// may be reported abandoned or missed (the checker's unexplained and
// log checks). The scenario fails if no failover brought an ended claim
// back (a fault that does nothing).
func scenarioRedisFailover(t *testing.T) {
	c := NewCluster(t, bins, Spec{ProxyNode: -1, AppendOnly: true, Jobs: []JobDef{tick, guard, five}})
	up := c.StartAll("r1", "r2", "r3")
	from := NextSecond(up).Add(time.Second)
	SleepUntil(from.Add(2 * time.Second))

	back := 0
	for i := range 3 {
		n := c.Redis.Node(i)
		// While the every-second jobs' runs of this second hold their
		// claims.
		SleepUntil(NextSecond(time.Now()).Add(150 * time.Millisecond))
		cp, err := n.Checkpoint()
		if err != nil {
			t.Fatal(err)
		}
		then := claimFields(t, n) // at the checkpoint, about
		time.Sleep(3 * time.Second)
		held := claimFields(t, n) // just before the node is lost
		if err := n.Kill(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		if err := n.StartFrom(cp); err != nil {
			t.Fatal(err)
		}
		// Claims the node held at the checkpoint, whose runs ended since,
		// are held there again.
		for f := range claimFields(t, n) {
			if then[f] && !held[f] {
				back++
			}
		}
		time.Sleep(4 * time.Second)
	}
	to := time.Now().Add(4 * time.Second).Truncate(time.Second)
	SleepUntil(to.Add(2 * time.Second))
	c.Check(from, to)
	if back == 0 {
		t.Errorf("no failover brought back a claim the node held at its checkpoint: the fault did nothing")
	}
	t.Logf("claims brought back by the three failovers: %d", back)
}

// claimFields are the fields of every claims hash on node n.
func claimFields(t *testing.T, n *redistest.Node) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	cl := n.Client()
	keys, err := cl.Keys(ctx, "*:claims").Result()
	if err != nil {
		t.Fatalf("node %s: %v", n.Addr(), err)
	}
	for _, k := range keys {
		fs, err := cl.HKeys(ctx, k).Result()
		if err != nil {
			t.Fatalf("node %s: %v", n.Addr(), err)
		}
		for _, f := range fs {
			out[k+" "+f] = true
		}
	}
	return out
}
