package redlock

import (
	"testing"

	"github.com/slotlock/slotlock/locking"
)

// NewLocker is New for the external tests, remembering the driver so that
// HoldNodes can reach its nodes.
var NewLocker = newLocker

// HoldNodes makes every node of l (a Locker from NewLocker) busy, as a node
// whose pipeline is in flight is: the calls that arrive queue for its
// sender. queued reports the fewest calls queued at any node; free sends
// what queued, each node's queue as the sender takes it.
func HoldNodes(tb testing.TB, l locking.Locker) (queued func() int, free func()) {
	tb.Helper()
	r := driverOf(l)
	var frees []func()
	for _, n := range r.nodes {
		frees = append(frees, holdSender(tb, n.(*redisNode)))
	}
	queued = func() int {
		fewest := -1
		for _, n := range r.nodes {
			b := &n.(*redisNode).batch
			b.mu.Lock()
			k := len(b.queue)
			b.mu.Unlock()
			if fewest < 0 || k < fewest {
				fewest = k
			}
		}
		return fewest
	}
	return queued, func() {
		for _, f := range frees {
			f()
		}
	}
}
