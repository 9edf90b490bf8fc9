package locking

import (
	"context"
	"time"
)

// A driver does the store calls of each step of a lease; the front end
// (NewLocker: locker.go, lease.go, store.go) makes the values, measures
// validity and runs the watchdog, so every driver behaves the same to a
// caller. Two exist: NewLocal's in-process map (local.go) and the Redlock
// quorum over Redis nodes (locking/redlock). A driver applies the
// semantics of the Node ops (node_ops.go) to its stores; the conformance
// suite (locking/lockingtest) checks every driver alike.

// Driver is one lock store as the front end uses it. Only a driver
// implements it; callers use the Backend that NewLocker returns.
type Driver interface {
	// Acquire takes s (AcquireOp) and returns a fencing token greater
	// than every token handed out before in s.Key.Family and different
	// from every other. On failure it has undone its writes on every node
	// it wrote or whose answer it did not get, and returns a *HeldError, a
	// *SplitVoteError, a *QuorumError or ctx.Err().
	Acquire(ctx context.Context, s LeaseSpec) (Granted, error)
	// Extend renews s (ExtendOp; start: confirm that a claim's work
	// began). It returns ErrLockLost when a majority answered that the
	// lease is no longer s's, and a *QuorumError when a majority could not
	// be reached.
	Extend(ctx context.Context, s LeaseSpec, start bool) error
	// Release ends s (ReleaseOp): deletes it, or, when e.DoneTTL > 0,
	// turns its key into e.Done for e.DoneTTL and adds e.Entry, if any, to
	// the family's log; where s is a claim, it releases e.Also and raises
	// e.Record in the same step, each with its own outcome. Errors as for
	// Extend.
	Release(ctx context.Context, s LeaseSpec, e EndSpec) Released
	// UndoAcquired ends s and s.Also, an acquisition that is not handed
	// out (it took too long), wherever it may hold: as Release, but made
	// sure of on every store that may hold it (redlock's undo).
	UndoAcquired(ctx context.Context, s LeaseSpec)
	// Store: the fleet's state on the same stores, as Store documents it;
	// Acquire of a claim refuses with a *PausedError while a pause is
	// active.
	Store
	// Ping, Mode and Close implement the Locker's.
	Ping(ctx context.Context) ([]NodeStatus, error)
	Mode() string
	Close() error
	// Size is the node count and quorum of the driver's rounds (the
	// spans' attributes).
	Size() (nodes, quorum int)
}

// NewLocker returns the Backend over d: the front end (Locker, Lease,
// Store) over a driver. NewLocal uses it with the in-process store,
// locking/redlock with the Redlock quorum.
func NewLocker(d Driver, opt Options) Backend { return newLocker(d, opt) }

// LeaseSpec is what a driver needs to act on a lease.
type LeaseSpec struct {
	Key   Key
	Value string // "<token>|<replica>"
	TTL   time.Duration
	Claim bool // a claim (Locker.Claim): work to be done at most once
	// Also (claims only) is a plain lease of the family taken in the same
	// step (Claim With); its TTL is the claim's.
	Also *LeaseSpec
}

// Granted is a successful acquisition, as the driver found it.
type Granted struct {
	Token     uint64
	Abandoned *Abandoned // a claim taken over: its holder never ended it
	Orphan    *Abandoned // another claim of the family seen abandoned
	Pause     Pause      // a claim's family's newest pause state, ended or not
	Leftover  bool       // a claim on a minority was taken over (see Grant.Leftover)
	Joined    bool       // LeaseSpec.Also was taken too, with the same token
}

// EndSpec is how a driver ends a lease (Lease.End): deleted (DoneTTL 0),
// or replaced by the done marker Done for DoneTTL, with Entry (when set)
// added to the family's log, which keeps its newest Keep entries.
type EndSpec struct {
	Done    string
	DoneTTL time.Duration
	Entry   *LogEntry
	Keep    int
	// Taken: the lease took another's claim over (Grant.Abandoned): its
	// entry is added only where the lease is ours, and a retry counts a
	// store holding it as one where the first attempt landed.
	Taken bool
	// Also, when set, is a plain lease of the claim's family (its job
	// lease) released in the same step on each store.
	Also *LeaseSpec
	// Record, when RecordN is not 0, is a record of the claim's family
	// raised to RecordN in the same step (AdvanceRecord).
	Record  Key
	RecordN int64
}

// Released is the outcome of a Release: of the lease itself, of
// EndSpec.Also and of EndSpec.Record (nil when not asked).
type Released struct{ Err, Also, Record error }
