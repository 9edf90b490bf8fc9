package redlock

import "sync/atomic"

// store is the fleet's state kept on the lock's nodes, beside the locks:
// the Store's reads and writes (log.go, pause.go, records.go,
// handled.go) and Ping, each a round over the same nodes as the leases.
type store struct {
	*nodeSet

	// nextRead turns Handled's reads round the nodes (handled.go).
	nextRead atomic.Uint32
}
