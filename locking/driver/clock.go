package driver

import (
	"context"
	"time"
)

// ClockReader is implemented by a Driver whose stores keep time of their
// own (Redis nodes: TIME). Exactly-once assumes that the replicas' clocks
// differ by at most the scheduler's MaxClockSkew, and the lock scripts
// compare a request's send time, on its sender's clock, with the node's;
// reading the nodes' clocks is how a replica finds out that its own is
// off. A driver whose store shares the caller's clock (the in-process
// store) does not implement it.
type ClockReader interface {
	// ReadClocks reads every node's clock once, one entry per node in
	// configuration order; a node that did not answer within the op
	// timeout has Read false and Err set. It measures the round trip of
	// each read on the caller's Clock (locking.Options.Clock).
	ReadClocks(ctx context.Context) []NodeClock
}

// NodeClock is one node's clock against the caller's, as one read of it
// found it.
type NodeClock struct {
	Addr string
	// Read: the node answered; Offset and Uncertainty hold.
	Read bool
	// Offset is the node's clock minus the caller's at the middle of the
	// read's round trip: positive when the node's is ahead. The true
	// offset lies within Offset ± Uncertainty, half the round trip (the
	// node read its clock somewhere in it).
	Offset, Uncertainty time.Duration
	Err                 error
}

// OffsetAt is the NodeClock a read sent at sent (on the caller's clock),
// answered at received, with the node's time node, describes.
func OffsetAt(sent, received, node time.Time) (offset, uncertainty time.Duration) {
	half := received.Sub(sent) / 2
	return node.Sub(sent.Add(half)), half
}
