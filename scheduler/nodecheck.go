package scheduler

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// The node check. The Redlock guarantee counts the lock nodes as
// independent servers: a majority of them keeps its data through the loss
// of any minority, and every node can take a claim. The configuration's
// text cannot show when that is not so — two addresses of one server (a
// DNS alias, a load balancer), a primary listed beside its own replica, a
// replica left where a primary was meant (or demoted there by a
// failover). Such an entry never takes a claim: a server's second
// address finds the claim its first took, a replica refuses every write
// (READONLY). The quorum then has fewer nodes than it counts and
// tolerates fewer faults — with one such entry of three, none: a slot is
// skipped "no_quorum" as soon as any other node is down, and the lines
// say only "split vote". The config validation refuses an address listed
// twice; the nodes themselves can tell the rest. Every nodeCheckEvery the
// replica asks each node which server it is and whose data it holds
// (locking.IdentityReader) and says what it finds once (warn), and once
// when it is gone (info); the count of entries that add no independent
// writable store goes to the metrics (NodeMetrics). Like the clock check
// it warns and measures: a demoted node is often a failover's moment, and
// the rounds already count a refusing node as one that said no.

// nodeCheckEvery is how often the node check asks the nodes.
const nodeCheckEvery = time.Minute

// NodeMetrics is what a Metrics may also implement to receive the node
// check's count (the command's metrics do:
// slotlock_lock_nodes_dependent).
type NodeMetrics interface {
	// NodesDependent is how many of the lock nodes read add no
	// independent writable store: a second entry of a server or a
	// dataset already counted, or a read-only replica.
	NodesDependent(n int)
}

// nodeCheck is the component that asks the nodes who they are; what it
// found and logged is its own.
type nodeCheck struct {
	*engine
	reader  locking.IdentityReader
	metrics NodeMetrics                  // nil: none
	found   map[history.NodeFinding]bool // logged, not yet cleared
}

// newNodeCheck returns the node check, or nil when the Locker cannot
// read identities.
func newNodeCheck(e *engine) *nodeCheck {
	ir, ok := e.cfg.Locker.(locking.IdentityReader)
	if !ok {
		return nil
	}
	m, _ := e.metrics.(NodeMetrics)
	return &nodeCheck{engine: e, reader: ir, metrics: m, found: map[history.NodeFinding]bool{}}
}

// loop checks at once, then every nodeCheckEvery, until the scheduler
// stops. It ends at the first read whose nodes cannot say who they are
// (the in-process store, simulated nodes, cluster endpoints only).
func (c *nodeCheck) loop() { c.repeat(nodeCheckEvery, c.check) }

// check reads the identities once and judges them; false when there is
// nothing to read, ever.
func (c *nodeCheck) check() bool {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	ids, err := c.reader.ReadIdentities(ctx)
	if errors.Is(err, locking.ErrClosed) {
		return false
	}
	read, unanswered := 0, 0
	for _, id := range ids {
		switch {
		case id.Read:
			read++
		case id.Err != nil:
			unanswered++
		}
	}
	if read == 0 {
		return unanswered > 0 // none could say, none will
	}
	now, dependent := history.DependentNodes(ids)
	if c.metrics != nil {
		c.metrics.NodesDependent(dependent)
	}
	c.judge(ids, now)
	return true
}

// judge logs each finding new in now, and each earlier one that a reading
// of all its nodes no longer finds.
func (c *nodeCheck) judge(ids []locking.NodeIdentity, now []history.NodeFinding) {
	for _, f := range now {
		if !c.found[f] {
			c.found[f] = true
			c.log.Warn(findingMessage(f), findingAttrs(ids, f, evNodeDependent)...)
		}
	}
	for _, f := range slices.SortedFunc(maps.Keys(c.found), history.NodeFinding.Compare) {
		if slices.Contains(now, f) || !ids[f.Index].Read || (f.Other >= 0 && !ids[f.Other].Read) {
			continue
		}
		delete(c.found, f)
		c.log.Info("lock nodes independent again: "+f.Reason+" no longer found", findingAttrs(ids, f, evNodeIndependent)...)
	}
}

func findingMessage(f history.NodeFinding) string {
	switch f.Reason {
	case history.NodeSameServer:
		return "lock nodes not independent: two entries of redis.nodes are one server; a claim can win only one " +
			"of them (the other finds it taken), so the quorum has a node fewer than it counts and tolerates a " +
			"fault fewer: list independent servers"
	case history.NodeSameDataset:
		return "lock nodes not independent: two entries of redis.nodes replicate one dataset (a primary and its " +
			"replica, or two replicas); a replica takes no claim, and a failover between them moves one " +
			"server's data to another entry: list independent primaries"
	default:
		return "lock node is a read-only replica: it refuses every lock write and counts as a node that is down; " +
			"list its primary (or a failover demoted it: it ends when the node is a primary again)"
	}
}

func findingAttrs(ids []locking.NodeIdentity, f history.NodeFinding, event string) []any {
	n := history.NodeStatusOf(ids, f)
	a := []any{"event", event, "reason", n.Reason, "node", n.Node, "index", n.Index}
	if n.OtherIndex != nil {
		return append(a, "other", n.Other, "other_index", *n.OtherIndex)
	}
	if n.Primary != "" {
		a = append(a, "primary", n.Primary)
	}
	return a
}
