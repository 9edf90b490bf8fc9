//go:build linux

package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking/redistest"
)

// linkCut is one replica cut from one node: its link to that node in a
// fault mode (Spec.Links).
type linkCut struct {
	replica string
	node    int
	mode    redistest.ProxyMode
	latency time.Duration // instead of mode, when set
}

// split_views: partitions between hosts, not faults of a node. Every
// replica reaches the nodes through links of its own, and the scenario
// cuts replicas from different nodes, so that replicas see different
// majorities: two replicas cut from two different nodes; each replica cut
// from another node (every two of them then share one node only, the one
// their claims meet on); each losing another node's replies (its requests
// run there unseen: a claim it counts as failed holds there); one replica
// cut from a majority while its peers reach every node; the same replica
// losing a majority's replies; its links to a majority slower than its op
// timeout (its requests run there late). Nothing may run twice. A
// majority stays reachable from every replica in the first three phases,
// so nothing may be missed there. In the last three, the replica cut from
// a majority is, to its peers, a replica that died: a slot it had won and
// not yet confirmed started when the cut came may have started, so it is
// reported missed (unknown), never run again — as for a replica killed
// (scenario replica_sigkill), such misses are excused from the lateness
// bound before the cut to a TTL after it. Its claims that land late on
// the nodes it cannot hear in time are undone behind them, and its peers
// ask again for a slot such a claim holds (HeldError.Unconfirmed); with
// its replies lost, the undo cannot be written until the cut ends (a new
// connection's handshake goes unanswered), and its peers may find its
// claims held until a TTL after the cut's end (docs/guarantees.md).
func scenarioSplitViews(t *testing.T) {
	c := NewCluster(t, bins, Spec{ProxyNode: -1, Links: true, Jobs: []JobDef{tick, guard, five}})
	up := c.StartAll("r1", "r2", "r3")
	from := NextSecond(up).Add(time.Second)
	SleepUntil(from.Add(2 * time.Second))
	phases := []struct {
		what     string
		cuts     []linkCut
		majority bool // a replica cut from a majority: a window for its won slots
	}{
		{"r1 cut from node 0 (packets dropped), r2 from node 2 (connections reset)",
			[]linkCut{{"r1", 0, redistest.Blackhole, 0}, {"r2", 2, redistest.Reject, 0}}, false},
		{"each replica cut from another node (every two share one node)",
			[]linkCut{{"r1", 0, redistest.Blackhole, 0}, {"r2", 1, redistest.Blackhole, 0}, {"r3", 2, redistest.Blackhole, 0}}, false},
		{"each replica losing another node's replies (its requests run there unseen)",
			[]linkCut{{"r1", 1, redistest.LoseReplies, 0}, {"r2", 2, redistest.LoseReplies, 0}, {"r3", 0, redistest.LoseReplies, 0}}, false},
		{"r1 cut from nodes 0 and 1 (no majority), r2 and r3 reach all three",
			[]linkCut{{"r1", 0, redistest.Blackhole, 0}, {"r1", 1, redistest.Reject, 0}}, true},
		{"r1 losing the replies of nodes 1 and 2 (its requests run there unseen; no majority answers it)",
			[]linkCut{{"r1", 1, redistest.LoseReplies, 0}, {"r1", 2, redistest.LoseReplies, 0}}, true},
		{"r1's links to nodes 0 and 2 slower than its op timeout (its requests run there late; no majority answers it in time)",
			[]linkCut{{"r1", 0, redistest.Pass, 200 * time.Millisecond}, {"r1", 2, redistest.Pass, 200 * time.Millisecond}}, true},
	}
	type window struct {
		cut         linkCut
		from, until time.Time
	}
	var windows []window
	for _, p := range phases {
		t.Logf("%s: %s", stamp(time.Now()), p.what)
		at := time.Now()
		for _, k := range p.cuts {
			c.Links.Link(k.replica, k.node).SetMode(k.mode)
			c.Links.Link(k.replica, k.node).SetLatency(k.latency)
		}
		time.Sleep(6 * time.Second)
		for _, k := range p.cuts {
			c.Links.Link(k.replica, k.node).SetMode(redistest.Pass)
			c.Links.Link(k.replica, k.node).SetLatency(0)
			windows = append(windows, window{k, at, time.Now()})
		}
		if p.majority {
			// Its job lease keeps the forbid job out for a TTL from the
			// cut; with its replies lost, its claims and leases land on
			// the nodes until the cut ends (its peers find them held),
			// so a TTL from the end.
			until := at
			if p.cuts[0].mode == redistest.LoseReplies {
				until = time.Now()
			}
			c.Faults.Legit(c.Faults.Start(at), until.Add(c.spec.TTL+time.Second), p.cuts[0].replica+" cut from a majority")
		}
		t.Logf("%s: healed", stamp(time.Now()))
		time.Sleep(3 * time.Second)
	}
	to := time.Now().Truncate(time.Second)
	SleepUntil(to.Add(2 * time.Second))
	c.Check(from, to)
	// Every cut must have bitten: the replica logged the node unreachable
	// while it lasted, or had it unreachable since before it (a failure
	// just after the previous phase healed) and not back until it ended
	// (a cut nobody noticed proves nothing).
	evs := c.Events()
	for _, w := range windows {
		addr := c.Links.Link(w.cut.replica, w.cut.node).Addr()
		n, back := 0, false
		var before Event // the replica's last word on the node before the cut
		for _, e := range evs {
			if e.Replica != w.cut.replica || e.Node != addr || e.Time.After(w.until) {
				continue
			}
			switch {
			case e.Msg != "locking: redis node unreachable" && e.Msg != "locking: redis node reachable again":
			case e.Time.Before(w.from):
				if e.Time.After(before.Time) {
					before = e
				}
			case e.Msg == "locking: redis node unreachable":
				n++
			default:
				back = true
			}
		}
		what := fmt.Sprintf("%s cut from node %d (%v, %s..%s)", w.cut.replica, w.cut.node, w.cut.mode, stamp(w.from), stamp(w.until))
		switch {
		case n > 0:
			t.Logf("%s: logged the node unreachable %d time(s)", what, n)
		case before.Msg == "locking: redis node unreachable" && !back:
			t.Logf("%s: the node unreachable since %s, not back before the cut ended", what, stamp(before.Time))
		default:
			t.Errorf("%s: it never logged the node unreachable", what)
		}
	}
}
