package locking

import "context"

// A Node is one lock store as the Redlock client sees it: it applies one
// Op atomically and answers with a Result. NewRedlock talks to Redis
// nodes through the Lua scripts beside this file (redisNode);
// NewRedlockNodes takes any implementation, such as the simulated nodes of
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

// OpKind says what an Op does.
type OpKind uint8

// The operations. Key, Live and Fence are full store keys; all keys of one
// Op share one hash tag.
const (
	// OpAcquire: with Hold == 0 (a plain lease), SET Key Value NX PX TTL;
	// refused (Status 0, Value = what Key holds) when Key exists.
	//
	// With Hold > 0 (a claim: a lease whose key outlives a crashed holder):
	// refused with Value = Live's value when Live exists, refused with
	// Value = Key's value when Key is a done marker; otherwise Live := Value
	// PX TTL and, when Key is absent, Key := Value PX Hold (Status 1), or,
	// when Key holds another claim whose lease has expired (its holder died
	// or froze while working), Key is kept and Status is 2 with Value = the
	// claim.
	//
	// On Status 1 or 2 the counter Fence is raised to N where it is lower.
	// N (Result) is Fence's value before, in every case.
	OpAcquire OpKind = iota + 1
	// OpExtend: where the lease holds Value (Live for a claim, else Key),
	// reset its TTL to TTL and, for a claim whose Key holds Value, Key's to
	// Hold. Status 1 when it held Value, else 0.
	OpExtend
	// OpRelease: Status 1 where the lease holds Value, else 0. With
	// DoneTTL == 0 delete Key where it holds Value and Live where it holds
	// Value. With DoneTTL > 0 set Key := Done PX DoneTTL where Key holds
	// Value, where Key is absent, or — a claim whose Live holds Value —
	// where Key holds another claim (not a done marker); delete Live where
	// it holds Value. A done marker is never overwritten, nor another
	// holder's live lease.
	OpRelease
	// OpFence: set the counter Key to N where it is lower (Status 1), else
	// Status 0. N (Result) is the counter afterwards.
	OpFence
	// OpMaxSet: raise the record Key to N where it is lower. No TTL.
	OpMaxSet
	// OpGet: read the integer record Key; Nil when absent.
	OpGet
	// OpPing: answer.
	OpPing
)

// Op is one request to a Node.
type Op struct {
	Kind               OpKind
	Key, Live, Fence   string
	Value, Done        string
	TTL, Hold, DoneTTL int64 // milliseconds
	N                  int64
}

// Result is a Node's answer to an Op.
type Result struct {
	Status int64
	Value  string
	N      int64
	Nil    bool
}
