package driver

import "context"

// IdentityReader is implemented by a Driver whose nodes can say which
// server they are and whose data they hold (Redis: INFO). The Redlock
// guarantee counts nodes as independent: a majority of them keeps its
// data through any minority's loss. Two addresses of one server, a
// primary listed beside its own replica, or a read-only replica (which
// refuses every lock write) each count in the configuration as a node
// they are not, and the text of the configuration cannot show it: the
// nodes can. A driver whose nodes are simulated or in-process does not
// implement it.
type IdentityReader interface {
	// ReadIdentities reads every node's identity once, one entry per node
	// in configuration order; a node that did not answer within the op
	// timeout has Read false and Err set, one that cannot say (a cluster
	// endpoint, whose answer would be one of its servers') Read false and
	// Err nil.
	ReadIdentities(ctx context.Context) []NodeIdentity
}

// NodeIdentity is which server a node is and whose data it holds, as one
// read of it found them.
type NodeIdentity struct {
	Addr string
	// Read: the node answered; the fields below hold.
	Read bool
	// Server identifies the server process (Redis: run_id): two
	// addresses with one Server are one server.
	Server string
	// Dataset identifies the data's replication history (Redis:
	// master_replid): a primary and its replicas share it, independent
	// servers do not.
	Dataset string
	// Replica: the node is a read-only replica; Primary is the primary it
	// names (host:port, as the replica knows it).
	Replica bool
	Primary string
	Err     error
}
