package locking

import (
	"context"
	"time"
)

// Grant describes a lease as it was granted: the key, the lease's
// identity, and, for a claim (Locker.Claim), what the claim found beside
// the key — its side outcomes, which the caller must act on before it
// does the work (see locking/driver's documentation, "Claims: work done
// at most once").
type Grant struct {
	// Key is the key the lease holds.
	Key Key
	// ID is a short random identifier of the lease (16 hex characters),
	// stored in the lock's value: a claim taken over after its holder died
	// names it (Abandoned.ID).
	ID string
	// Holder is the replica name stored in the lock's value
	// (Options.Replica).
	Holder string
	// TTL is the length the lease is renewed to.
	TTL time.Duration

	// Abandoned is non-nil when Claim took over a claim whose holder never
	// ended it (see Locker.Claim): the work it stands for must not be done
	// again.
	Abandoned *Abandoned
	// Leftover reports that the Claim took over, on a minority of the
	// stores, another claim of its key (one a store kept after missing its
	// end, or one a late request left): the lease holds the key, but the
	// claim is not the lease's on a majority, so the work must not be done
	// under it. End it with a done marker (Ending.DoneTTL) to clear the
	// leftover, or release it.
	Leftover bool
	// Orphan is non-nil when, during the Claim, a store held another claim
	// of the same family whose lease had expired: work abandoned by its
	// holder. Claim its key to take it over and report it (Abandoned).
	Orphan *Abandoned
	// Pause is the newest pause state of the claim's family that the
	// stores held when it was claimed — not active then (Claim refuses
	// while a pause is active), but it may have covered the work's due
	// time (Pause.Covers).
	Pause Pause
	// Joined is the lease taken together with the claim (With), with the
	// same token; nil when it was not taken.
	Joined *Lease
}

// Locker hands out leases. Implementations: Redlock (N independent Redis
// nodes) and Local (in-process, one replica), each with the Store on the
// same lock stores. Both pass the conformance suite in
// locking/lockingtest. A Locker is safe for concurrent use.
type Locker interface {
	// Acquire tries once to take key for ttl. On success the lease carries a
	// fencing token greater than that of every lease acquired before in the
	// same family. It fails with a *HeldError (errors.Is ErrNotAcquired) when
	// the key is held or is a done marker, a *QuorumError when a majority could
	// not be reached, or ctx.Err() when ctx ends first. A failed attempt leaves
	// nothing behind on the nodes it touched.
	Acquire(ctx context.Context, key Key, ttl time.Duration) (*Lease, error)

	// Claim is Acquire for work that must be done at most once. Besides the
	// lease it leaves a claim on key that stays until the lease's owner
	// ends it, so a holder that dies or freezes while working does not free
	// the key when its lease expires. Lease.End removes the claim (before
	// the work began) or turns it into a done marker (Ending.DoneTTL). Once
	// the lease has expired, the next Claim takes the key over: it
	// succeeds with Grant.Abandoned describing the claim, and must not do
	// the work (report it, then end it with a done marker). A claim seen on
	// any node counts, even when a majority lets the caller in. A
	// successful Claim may also report, in Grant.Orphan, another key of the
	// family whose claim was abandoned, for the caller to Claim and report.
	// While the family is paused (Store.SetPause) Claim fails with a
	// *PausedError. A key is used either with Acquire or with Claim, never
	// both. The options (With) add to what the same step takes; a Locker
	// that wraps another passes them on.
	Claim(ctx context.Context, key Key, ttl time.Duration, opts ...ClaimOption) (*Lease, error)

	// Ping checks every node; it returns nil when a majority answered within
	// the op timeout. The slice has one entry per node, in configuration order.
	Ping(ctx context.Context) ([]NodeStatus, error)

	// Mode describes the locker for logs: "local" or "redlock(3 nodes)".
	Mode() string

	// Close releases the connections. Leases still held are not released.
	Close() error

	// Store: the fleet's state kept on the same lock stores, beside the
	// locks. They belong together: a claim reads its family's pause
	// register (Grant.Pause), and Lease.End writes its log and records in
	// the same step on each store.
	Store
}
