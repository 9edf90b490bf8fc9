package driver

import "context"

// A Node is one lock store as the Redlock client sees it: it applies one
// Op atomically and answers with a Result. redlock.New talks to Redis
// nodes through the Lua scripts of locking/redlock (redisNode);
// redlock.OnNodes takes any implementation, such as the simulated nodes of
// locking/locksim, which must keep exactly these semantics: the
// conformance suite in locking/lockingtest runs against both.
//
// Values: a lease stores "<token>|<replica>" (token: 32 hex characters of
// a random 128-bit number); a done marker stores "done|<replica>|<note>".
// TTLs are in milliseconds; a key whose TTL ran out is absent.
type Node interface {
	// Addr names the node in errors and logs.
	Addr() string
	// Do applies op. An error means the node did not answer in time or
	// refused: the op may or may not have been applied (a request can be
	// executed after its sender gave up).
	Do(ctx context.Context, op Op) (Result, error)
	// Close releases the node's connections.
	Close() error
}

// An Op is one request to a Node: an AcquireOp, ExtendOp, ReleaseOp,
// PauseOp, FenceOp, MaxSetOp, GetOp, PingOp, LogOp, LogAddOp, ClaimsOp,
// DoneOp or TimeOp (ops.go), each a value. Keys in an Op are full store keys;
// all keys of one Op share one hash tag (except DoneOp's). A Node that wraps another may rewrite an
// op by its type:
//
//	if r, ok := op.(locking.ReleaseOp); ok {
//		r.RecordN = 0
//		op = r
//	}
type Op interface {
	// Kind says which op it is.
	Kind() OpKind
	isOp()
}

// OpKind names the type of an Op (for a test that counts or delays
// requests by kind).
type OpKind uint8

// The kinds of Op.
const (
	OpAcquire OpKind = iota + 1 // AcquireOp
	OpExtend                    // ExtendOp
	OpRelease                   // ReleaseOp
	OpPause                     // PauseOp
	OpFence                     // FenceOp
	OpMaxSet                    // MaxSetOp
	OpGet                       // GetOp
	OpPing                      // PingOp
	OpLog                       // LogOp
	OpLogAdd                    // LogAddOp
	OpClaims                    // ClaimsOp
	OpDone                      // DoneOp
	OpTime                      // TimeOp
)

// Result is a Node's answer to an Op; each Op says which fields it sets.
type Result struct {
	Status              int64
	Value               string
	N                   int64
	Nil                 bool
	Orphan, OrphanValue string // AcquireOp of a claim: an abandoned claim of another field
	Pause               string // AcquireOp of a claim: the pause register's value
	AlsoStatus          int64  // AcquireOp, ReleaseOp with Also: 1 where Also was set / held AlsoValue
	Claim               string // AcquireOp of a claim refused by a live lease: the claim under it
	Log                 []LogEntry
	Fields              []string // ClaimsOp; DoneOp (one per key)
}
