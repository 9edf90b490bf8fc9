package driver

import (
	"context"
	"time"
)

// Driver is one lock store as package locking uses it: it does the store
// calls of each step of a lease, and locking.NewLocker makes the values,
// measures validity and runs the watchdog over it, so every driver
// behaves the same to a caller. A driver applies the semantics of the
// Node ops (ops.go) to its stores; the conformance suite
// (locking/lockingtest) checks every driver alike. Its reads and writes
// of the fleet's state are the embedded Store.
type Driver interface {
	// Acquire takes l (AcquireOp) and returns a fencing token greater
	// than every token handed out before in l.Key.Family and different
	// from every other. On failure it has undone its writes on every node
	// it wrote or whose answer it did not get, and returns a *HeldError, a
	// *SplitVoteError, a *QuorumError or ctx.Err().
	Acquire(ctx context.Context, l Lease) (Grant, error)
	// Extend renews l (ExtendOp; start: confirm that a claim's work
	// began). It returns ErrLockLost when a majority answered that the
	// lease is no longer l's, and a *QuorumError when a majority could not
	// be reached.
	Extend(ctx context.Context, l Lease, start bool) error
	// Release ends l (ReleaseOp): deletes it, or, when e.DoneTTL > 0,
	// turns its key into e.Done for e.DoneTTL and adds e.Entry, if any, to
	// the family's log; where l is a claim, it releases e.Also and raises
	// e.Record in the same step, each with its own outcome. Errors as for
	// Extend.
	Release(ctx context.Context, l Lease, e End) Released
	// UndoAcquired ends l and l.Also, an acquisition that is not handed
	// out (it took too long), wherever it may hold: as Release, but made
	// sure of on every store that may hold it (redlock's undo).
	UndoAcquired(ctx context.Context, l Lease)
	// Store: the fleet's state on the same stores, as Store documents it;
	// Acquire of a claim refuses with a *PausedError while a pause is
	// active.
	Store
	// Ping, Mode and Close implement the locking.Locker's.
	Ping(ctx context.Context) ([]NodeStatus, error)
	Mode() string
	Close() error
	// Size is the node count and quorum of the driver's rounds (the
	// spans' attributes).
	Size() (nodes, quorum int)
}

// Lease is what a driver needs to act on a lease.
type Lease struct {
	Key   Key
	Value string // "<token>|<replica>"
	TTL   time.Duration
	Claim bool // a claim (locking.Locker.Claim): work to be done at most once
	// Also (claims only) is a plain lease of the family taken in the same
	// step (locking.With); its TTL is the claim's.
	Also *Lease
}

// Grant is a successful acquisition, as the driver found it.
type Grant struct {
	Token     uint64
	Abandoned *Abandoned // a claim taken over: its holder never ended it
	Orphan    *Abandoned // another claim of the family seen abandoned
	Pause     Pause      // a claim's family's newest pause state, ended or not
	Leftover  bool       // a claim on a minority was taken over (see locking.Grant.Leftover)
	Joined    bool       // Lease.Also was taken too, with the same token
}

// End is how a driver ends a lease (locking's Lease.End): deleted
// (DoneTTL 0), or replaced by the done marker Done for DoneTTL, with Entry
// (when set) added to the family's log, which keeps its newest Keep
// entries.
type End struct {
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
	Also *Lease
	// Record, when RecordValue is not 0, is a record of the claim's family
	// raised to RecordValue in the same step (Store.AdvanceRecord).
	Record      Key
	RecordValue int64
}

// Released is the outcome of ending a lease: Err the lease's, Also
// End.Also's, Record End.Record's (nil when not asked). Err and Also are
// ErrLockLost when the key no longer held the lease's value on a
// majority, a *QuorumError when a majority could not be reached.
type Released struct{ Err, Also, Record error }
