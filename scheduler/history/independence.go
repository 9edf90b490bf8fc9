package history

import (
	"cmp"
	"slices"

	"github.com/slotlock/slotlock/locking"
)

// The reasons of a NodeFinding.
const (
	NodeSameServer  = "same_server"  // two entries are one server
	NodeSameDataset = "same_dataset" // two entries replicate one dataset
	NodeReplica     = "replica"      // an entry is a read-only replica
)

// NodeFinding is one way the nodes read are not independent: a node's own
// (Reason NodeReplica, Other -1) or a pair's (Index < Other). Indexes are
// the nodes' places in configuration order.
type NodeFinding struct {
	Reason       string
	Index, Other int
}

// DependentNodes judges one reading of the nodes' identities
// (locking.IdentityReader): what it shows, in index order, and how many of the
// nodes read add no independent writable store — the nodes read, less
// the groups of them that share a server or a dataset and hold a
// primary. A node unread is judged neither way: a node down is not
// evidence of anything.
func DependentNodes(ids []locking.NodeIdentity) ([]NodeFinding, int) {
	var found []NodeFinding
	group := make([]int, len(ids)) // each node's group: the lowest index it shares one with
	read := 0
	for i, a := range ids {
		group[i] = i
		if !a.Read {
			continue
		}
		read++
		if a.Replica {
			found = append(found, NodeFinding{NodeReplica, i, -1})
		}
		for j := range i {
			if reason := sharedBy(a, ids[j]); reason != "" {
				found = append(found, NodeFinding{reason, j, i})
				merge(group, i, j)
			}
		}
	}
	writable := map[int]bool{}
	for i, id := range ids {
		if id.Read && !id.Replica {
			writable[root(group, i)] = true
		}
	}
	slices.SortFunc(found, NodeFinding.Compare)
	return found, read - len(writable)
}

// sharedBy is what two nodes read share: a server, a dataset, or nothing
// ("").
func sharedBy(a, b locking.NodeIdentity) string {
	switch {
	case !a.Read || !b.Read:
		return ""
	case a.Server != "" && a.Server == b.Server:
		return NodeSameServer
	case a.Dataset != "" && a.Dataset == b.Dataset:
		return NodeSameDataset
	}
	return ""
}

// Compare orders findings by index, then other, then reason: the order
// DependentNodes returns them in.
func (f NodeFinding) Compare(g NodeFinding) int {
	return cmp.Or(cmp.Compare(f.Index, g.Index), cmp.Compare(f.Other, g.Other), cmp.Compare(f.Reason, g.Reason))
}

// root and merge are a union-find over node indexes.
func root(group []int, i int) int {
	for group[i] != i {
		i = group[i]
	}
	return i
}

func merge(group []int, i, j int) {
	a, b := root(group, i), root(group, j)
	group[max(a, b)] = min(a, b)
}
