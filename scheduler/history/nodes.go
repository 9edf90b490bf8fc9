package history

import (
	"context"
	"fmt"

	"github.com/slotlock/slotlock/locking"
)

// NodeStatus is an entry of redis.nodes that is not an independent server,
// as a reading of the nodes found it (DependentNodes): the fields
// of the node check's lock.node_dependent lines.
type NodeStatus struct {
	Reason string `json:"reason"` // NodeSameServer, NodeSameDataset, NodeReplica
	Node   string `json:"node"`
	Index  int    `json:"index"`
	// Other and OtherIndex are the pair's other entry (same_server,
	// same_dataset); Primary the primary a replica names.
	Other      string `json:"other,omitempty"`
	OtherIndex *int   `json:"other_index,omitempty"`
	Primary    string `json:"primary,omitempty"`
}

// NodeStatusOf is finding f of the reading ids.
func NodeStatusOf(ids []locking.NodeIdentity, f NodeFinding) NodeStatus {
	n := NodeStatus{Reason: f.Reason, Node: ids[f.Index].Addr, Index: f.Index}
	if f.Other >= 0 {
		n.Other, n.OtherIndex = ids[f.Other].Addr, &f.Other
	} else {
		n.Primary = ids[f.Index].Primary
	}
	return n
}

// Text says what the finding costs, for `slotlock status`.
func (n NodeStatus) Text() string {
	switch n.Reason {
	case NodeSameServer:
		return fmt.Sprintf("redis.nodes[%d] %s and [%d] %s are one server: the quorum tolerates a fault fewer than it counts; list independent servers",
			n.Index, n.Node, *n.OtherIndex, n.Other)
	case NodeSameDataset:
		return fmt.Sprintf("redis.nodes[%d] %s and [%d] %s replicate one dataset: the quorum tolerates a fault fewer than it counts; list independent primaries",
			n.Index, n.Node, *n.OtherIndex, n.Other)
	}
	of := ""
	if n.Primary != "" {
		of = " of " + n.Primary
	}
	return fmt.Sprintf("redis.nodes[%d] %s is a read-only replica%s: it refuses every lock write and counts as a node that is down",
		n.Index, n.Node, of)
}

// readNodes reads the lock nodes' identities, when the store can say
// them, and returns the entries that are not independent servers; none
// when the store cannot say or did not answer (the node check's lines
// and slotlock_lock_nodes_dependent say more over time).
func readNodes(ctx context.Context, store Store) []NodeStatus {
	ir, ok := store.(locking.IdentityReader)
	if !ok {
		return nil
	}
	ids, err := ir.ReadIdentities(ctx)
	if err != nil {
		return nil
	}
	found, _ := DependentNodes(ids)
	var out []NodeStatus
	for _, f := range found {
		out = append(out, NodeStatusOf(ids, f))
	}
	return out
}
