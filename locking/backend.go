package locking

import (
	"context"
	"time"
)

// backend is one lock store: the Redlock quorum (redlock.go) or the
// in-process map (local.go). The shared front end (locker.go, lease.go)
// builds values, computes validity and runs the watchdog, so both stores
// behave the same to the scheduler.
//
// Values: a held key stores "<token>|<replica>" (token: 32 hex chars of a
// random 128-bit number); a done marker stores "done|<replica>|<note>".
type backend interface {
	// acquire sets key to value for ttl where it is absent, and returns a
	// fencing token greater than every token handed out before in
	// key.Family. On failure it has undone its writes on every node it
	// wrote or whose answer it did not get, and returns a *HeldError, a
	// *QuorumError or ctx.Err().
	acquire(ctx context.Context, key Key, value string, ttl time.Duration) (token uint64, err error)
	// extend resets key's TTL to ttl where key still holds value. It returns
	// ErrLockLost when a majority answered that key no longer holds value,
	// and a *QuorumError when a majority could not be reached.
	extend(ctx context.Context, key Key, value string, ttl time.Duration) error
	// release deletes key where it holds value or, when doneTTL > 0,
	// replaces it there by doneValue with doneTTL, in one atomic step.
	// With doneTTL > 0 it also sets the marker where key is absent, never
	// over another value.
	release(ctx context.Context, key Key, value, doneValue string, doneTTL time.Duration) error
	// advanceRecord and readRecord implement Locker's record operations.
	advanceRecord(ctx context.Context, key Key, v int64) error
	readRecord(ctx context.Context, key Key) (int64, error)
	ping(ctx context.Context) ([]NodeStatus, error)
	mode() string
	close() error
}
