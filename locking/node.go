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

// The operations. Key, Fence, Claims and Lives are full store keys; all
// keys of one Op share one hash tag.
const (
	// OpAcquire: for a plain lease (Field == ""), SET Key Value NX PX TTL;
	// refused (Status 0, Value = what Key holds) when Key exists.
	//
	// For a claim (Field != "": work to be done at most once, Key is where
	// its done marker goes): refused with Value = Key's value when Key
	// exists (a done marker); refused with Value = the live lease's value
	// when Lives[Field] holds an unexpired lease (Result.Claim is then
	// Claims[Field], "" when absent, whoever's lease refused); otherwise Lives[Field] :=
	// Value with an expiry TTL from now (the node's clock) and, when
	// Claims[Field] is absent, Claims[Field] := Value (Status 1), or, when
	// it holds another claim whose lease has expired (its holder died or
	// froze while working), Claims[Field] is kept and Status is 2 with
	// Value = the claim. A claim stays until its owner ends it. On success
	// Orphan/OrphanValue name another field of Claims whose lease has
	// expired, if any: an abandoned claim for the caller to take over.
	//
	// For a claim, the family's pause register (Pause) is returned in
	// Result.Pause whatever the outcome: the caller decides, over the
	// majority, whether the work is paused. Where AlsoValue is set and the
	// claim is new here (Status 1), Also, a plain lease of the family (a
	// job lease), is set to AlsoValue with TTL where absent, in the same
	// step, unless the node's clock is more than FreshMS past SentMS (the
	// sender's clock when it sent the op: a request run late): Result.
	// AlsoStatus 1 where it was set.
	//
	// On Status 1 or 2 the counter Fence is set to max(Fence+1, N) and N
	// (Result) is its new value; on Status 0 N (Result) is Fence's value
	// as found. Every lease set on a node thus moves the node's counter
	// up by at least one, so that nodes that saw the same acquisitions
	// agree on the next token.
	OpAcquire OpKind = iota + 1
	// OpExtend: where the lease holds Value and has not expired (Lives
	// [Field] for a claim, else Key), reset its expiry to TTL from now.
	// Status 1 when it did, else 0. For a claim with Start set, where it
	// did and Claims[Field] == Value, Claims[Field] := StartedPrefix +
	// Value: the claim's owner confirms that its work began.
	//
	// Claims are compared and returned as stored: wherever an op above
	// compares Claims[Field] with Value, StartedPrefix + Value counts as
	// Value (the claim is the lease's own either way), and a claim
	// returned (Value of Status 2, Claim, OrphanValue) keeps its prefix.
	OpExtend
	// OpRelease: where DoneTTL > 0 and Key already holds Done (a retry
	// whose first answer was lost), nothing changes and Status is 1.
	// Otherwise, for a plain lease: with DoneTTL == 0 delete Key where it
	// holds Value; with DoneTTL > 0 set Key := Done PX DoneTTL where Key
	// holds Value or is absent. Status 1 where Key held Value, else 0.
	//
	// For a claim: the lease is ours when Claims[Field] == Value or
	// Lives[Field] holds Value unexpired (Status 1, else 0); Lives[Field]
	// is deleted where it holds Value. With DoneTTL == 0 Claims[Field] is
	// deleted where it is Value. With DoneTTL > 0, where the claim is ours,
	// absent, or another claim whose lease we hold (one we took over),
	// Claims[Field] is deleted and Key := Done PX DoneTTL unless Key exists;
	// there Entry (when set) is added to the family's log (the sorted set
	// Log) with score N, and the log keeps its newest Keep entries.
	//
	// For a claim, in the same step whatever else happens: Also (when
	// AlsoValue is set) is a plain lease of the same family (a job lease),
	// deleted where it holds AlsoValue (Result.AlsoStatus 1 where it did,
	// else 0); Record (when RecordN is not 0) is a record of the family,
	// raised to RecordN where it is lower (OpMaxSet).
	OpRelease
	// OpPause: the family's pause register at Key holds
	// "<version>|<p or r>|<until ms>|<by>|<reason>" (p: paused until the
	// instant, 0 for no end; r: resumed). Set it to Value where N, Value's
	// version, is greater than the version it holds (Status 1), else
	// Status 0; N = 0 only reads. Value (Result) is what it holds
	// afterwards ("" when never set).
	OpPause
	// OpFence: set the counter Key to N where it is lower (Status 1), else
	// Status 0. N (Result) is the counter afterwards.
	OpFence
	// OpMaxSet: raise the record Key to N where it is lower. No TTL.
	OpMaxSet
	// OpGet: read the integer record Key; Nil when absent.
	OpGet
	// OpPing: answer.
	OpPing
	// OpLog: read the family's log at Key: its entries of score N or more,
	// newest first, at most Keep (Result.Log).
	OpLog
	// OpLogAdd: remove Value (when set) from the log at Key, add Entry
	// with score N, then remove the entries scored below Floor (when not
	// 0) and all but the newest Keep (when Keep > 0); Status 1.
	//
	// Fenced (RecordN > 0, a lease's fencing token): first, where the
	// register Record (a record of the family) holds more than RecordN,
	// nothing changes and Status is 2 (the holder of a newer lease
	// appended here); otherwise Record is raised to RecordN. IfAbsent:
	// then, where the log holds an entry scored N, nothing more changes
	// and Status is 0.
	OpLogAdd
	// OpClaims: list the fields of the claims hash Claims (Result.Fields).
	OpClaims
)

// Op is one request to a Node.
type Op struct {
	Kind                 OpKind
	Key, Fence           string
	Claims, Lives, Field string // claims only
	Pause                string // claims only: the family's pause register, read
	Log, Entry           string // OpRelease of a claim: the family's log and an entry for it
	Also, AlsoValue      string // OpAcquire, OpRelease of a claim: a plain lease taken / released with it
	Record               string // OpRelease of a claim: a record raised to RecordN with it; OpLogAdd: its fence
	RecordN              int64
	IfAbsent             bool  // OpLogAdd: add only where no entry has score N
	SentMS, FreshMS      int64 // OpAcquire with Also: when sent (sender's clock, ms) and how long it is fresh
	// Tomb: OpAcquire refuses (Status 0, nothing changed, Value "") when
	// the key Tomb exists; OpRelease with TombTTL > 0 sets Tomb PX TombTTL
	// first, whatever else it does (an undo's tombstone: redlock's undo).
	Tomb         string
	TombTTL      int64
	Keep         int64 // OpRelease: entries the log keeps; OpLog: most entries read
	Value, Done  string
	TTL, DoneTTL int64 // milliseconds
	N            int64
	Start        bool  // OpExtend of a claim: its work began (confirm it)
	Floor        int64 // OpLogAdd: lowest score kept (0: no floor)
}

// Result is a Node's answer to an Op.
type Result struct {
	Status              int64
	Value               string
	N                   int64
	Nil                 bool
	Orphan, OrphanValue string // OpAcquire of a claim: an abandoned claim of another field
	Pause               string // OpAcquire of a claim: the pause register's value
	AlsoStatus          int64  // OpAcquire, OpRelease with Also: 1 where Also was set / held AlsoValue
	Claim               string // OpAcquire of a claim refused by a live lease: the claim under it
	Log                 []LogEntry
	Fields              []string // OpClaims
}

// LogEntry is one entry of a family's log (Lease.End,
// Store.ReadLog): an opaque value and its score (the caller's order, e.g.
// a slot's Unix time).
type LogEntry struct {
	Score int64
	Value string
}

// LogAppend is one Store.AppendLog: Entry is added; Replace, when set,
// is removed in the same step (a heartbeat replacing its previous one);
// then the log keeps the entries scored Floor or more (Floor 0: all) and,
// when Keep > 0, its newest Keep.
//
// Token, when not 0, fences the append with a lease's fencing token
// (Lease.Token; a lease of any family): Fence names a record of the log's
// family (a register, as AdvanceRecord's) that each store raises to Token
// in the same step, and a store whose register already holds more — the
// holder of a newer lease appended there — changes nothing. A holder that
// froze past its lease thus cannot append once its successor has.
//
// IfAbsent adds Entry only where the log holds no entry of its score: a
// verdict that must be reported once (the reconciler's missed slot) is
// reported by the one append that added it on a majority.
type LogAppend struct {
	Entry   LogEntry
	Replace string
	Keep    int
	Floor   int64

	Fence    string
	Token    uint64
	IfAbsent bool
}
