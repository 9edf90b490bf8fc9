package history

import (
	"fmt"
	"testing"

	"github.com/slotlock/slotlock/locking"
)

// ident is a node read as server s with dataset d; replica names its
// primary ("" a primary).
func ident(s, d, primary string) locking.NodeIdentity {
	return locking.NodeIdentity{Read: true, Server: s, Dataset: d, Replica: primary != "", Primary: primary}
}

// identities addresses ids as n0, n1, ... in order.
func identities(ids ...locking.NodeIdentity) []locking.NodeIdentity {
	for i := range ids {
		ids[i].Addr = fmt.Sprintf("n%d", i)
	}
	return ids
}

func TestDependentNodes(t *testing.T) {
	down := locking.NodeIdentity{Err: fmt.Errorf("timeout")}
	f := func(reason string, index, other int) NodeFinding { return NodeFinding{reason, index, other} }
	cases := []struct {
		name      string
		ids       []locking.NodeIdentity
		want      []NodeFinding
		dependent int
	}{
		{"independent primaries", identities(ident("a", "A", ""), ident("b", "B", ""), ident("c", "C", "")), nil, 0},
		{"one server listed twice", identities(ident("a", "A", ""), ident("b", "B", ""), ident("a", "A", "")),
			[]NodeFinding{f(NodeSameServer, 0, 2)}, 1},
		{"a primary and its replica", identities(ident("a", "A", ""), ident("b", "B", ""), ident("c", "B", "n1")),
			[]NodeFinding{f(NodeSameDataset, 1, 2), f(NodeReplica, 2, -1)}, 1},
		{"a replica of a server not listed", identities(ident("a", "A", ""), ident("b", "B", ""), ident("c", "X", "x:6379")),
			[]NodeFinding{f(NodeReplica, 2, -1)}, 1},
		{"two replicas of one primary not listed", identities(ident("a", "A", ""), ident("b", "X", "x:1"), ident("c", "X", "x:1")),
			[]NodeFinding{f(NodeReplica, 1, -1), f(NodeSameDataset, 1, 2), f(NodeReplica, 2, -1)}, 2},
		{"one server three times", identities(ident("a", "A", ""), ident("a", "A", ""), ident("a", "A", "")),
			[]NodeFinding{f(NodeSameServer, 0, 1), f(NodeSameServer, 0, 2), f(NodeSameServer, 1, 2)}, 2},
		{"a node down is not judged", identities(ident("a", "A", ""), down, ident("a", "A", "")),
			[]NodeFinding{f(NodeSameServer, 0, 2)}, 1},
		{"a node that cannot say (cluster endpoint)", identities(ident("a", "A", ""), locking.NodeIdentity{}, ident("c", "C", "")), nil, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, dependent := DependentNodes(c.ids)
			if fmt.Sprint(got) != fmt.Sprint(c.want) || dependent != c.dependent {
				t.Fatalf("DependentNodes = %v, %d; want %v, %d", got, dependent, c.want, c.dependent)
			}
		})
	}
}
