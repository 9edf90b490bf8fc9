package locking

import (
	"context"
	"time"
)

// ending is how a lease ends: deleted (doneTTL 0), or replaced by the done
// marker done for doneTTL, with entry (when set) added to the family's log,
// which keeps its newest keep entries.
type ending struct {
	done    string
	doneTTL time.Duration
	entry   *LogEntry
	keep    int
	// taken: the lease took another's claim over (Grant.Abandoned): its
	// entry is added only where the lease is ours, and a retry counts a
	// store holding it as one where the first attempt landed.
	taken bool
	// also, when set, is a plain lease of the claim's family (its job
	// lease) released in the same step on each store (Lease.End).
	also *leaseSpec
	// record, when recordN is not 0, is a record of the claim's family
	// raised to recordN in the same step (AdvanceRecord).
	record  Key
	recordN int64
}

// released is the outcome of a release: of the lease itself, of
// ending.also and of ending.record (nil when not asked).
type released struct{ err, also, record error }

// backend is one lock store: the Redlock quorum (redlock*.go) or the
// in-process map (local.go). The shared front end (locker.go, lease.go)
// builds values, computes validity and runs the watchdog, so both stores
// behave the same to the scheduler. The semantics of each operation are
// those of the Node ops (node_ops.go), applied to a quorum of nodes.
type backend interface {
	// acquire takes s (AcquireOp) and returns a fencing token greater
	// than every token handed out before in s.key.Family and different
	// from every other. On failure it has undone its writes on every node
	// it wrote or whose answer it did not get, and returns a *HeldError, a
	// *SplitVoteError, a *QuorumError or ctx.Err().
	acquire(ctx context.Context, s leaseSpec) (grant, error)
	// extend renews s (ExtendOp; start: confirm that a claim's work
	// began). It returns ErrLockLost when a majority answered that the
	// lease is no longer s's, and a *QuorumError when a majority could not
	// be reached.
	extend(ctx context.Context, s leaseSpec, start bool) error
	// release ends s (ReleaseOp): deletes it, or, when e.doneTTL > 0,
	// turns its key into e.done for e.doneTTL and adds e.entry, if any, to
	// the family's log; where s is a claim, it releases e.also and raises
	// e.record in the same step, each with its own outcome. Errors as for
	// extend.
	release(ctx context.Context, s leaseSpec, e ending) released
	// undoAcquired ends s and s.also, an acquisition that is not handed
	// out (it took too long), wherever it may hold: as release, but made
	// sure of on every store that may hold it (redlock's undo).
	undoAcquired(ctx context.Context, s leaseSpec)
	// readLog implements Store.ReadLog.
	readLog(ctx context.Context, family string, since int64, limit int) ([]LogEntry, error)
	// appendLog and readClaims implement Store.AppendLog and ReadClaims.
	appendLog(ctx context.Context, family string, a LogAppend) error
	readClaims(ctx context.Context, family string) ([]Key, error)
	// handled implements Store.Handled.
	handled(ctx context.Context, keys []Key) ([]bool, error)
	// advanceRecord and readRecord implement the Store's record operations.
	advanceRecord(ctx context.Context, key Key, v int64) error
	readRecord(ctx context.Context, key Key) (int64, error)
	// setPause and readPause implement the Store's pause operations; acquire
	// of a claim refuses with a *PausedError while a pause is active.
	setPause(ctx context.Context, family string, p Pause) (Pause, error)
	readPause(ctx context.Context, family string) (Pause, error)
	ping(ctx context.Context) ([]NodeStatus, error)
	mode() string
	// size is the node count and quorum of the backend's rounds (for the
	// spans' attributes).
	size() (nodes, quorum int)
	close() error
}

// leaseSpec is what the backends need to act on a lease.
type leaseSpec struct {
	key   Key
	value string // "<token>|<replica>"
	ttl   time.Duration
	claim bool // a claim (Locker.Claim): work to be done at most once
	// also (claims only) is a plain lease of the family taken in the same
	// step (Claim With); its ttl is the claim's.
	also *leaseSpec
}

// grant is a successful acquisition.
type grant struct {
	token     uint64
	abandoned *Abandoned // a claim taken over: its holder never ended it
	orphan    *Abandoned // another claim of the family seen abandoned
	pause     Pause      // a claim's family's newest pause state, ended or not
	leftover  bool       // a claim on a minority was taken over (see acquire)
	joined    bool       // leaseSpec.also was taken too, with the same token
}
