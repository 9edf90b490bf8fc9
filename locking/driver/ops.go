package driver

// The requests a Node applies (Op), one type per kind, each applied
// atomically. TTLs and times are in milliseconds.

// AcquireOp takes a lease.
//
// For a plain lease (Field == ""): SET Key Value NX PX TTL; refused
// (Status 0, Value = what Key holds) when Key exists.
//
// For a claim (Field != "": work to be done at most once, Key is where its
// done marker goes): refused with Value = Key's value when Key exists (a
// done marker); refused with Value = the live lease's value when
// Lives[Field] holds an unexpired lease (Result.Claim is then
// Claims[Field], "" when absent, whoever's lease refused); otherwise
// Lives[Field] := Value with an expiry TTL from now (the node's clock)
// and, when Claims[Field] is absent, Claims[Field] := Value (Status 1), or,
// when it holds another claim whose lease has expired (its holder died or
// froze while working), Claims[Field] is kept and Status is 2 with Value =
// the claim. A claim stays until its owner ends it. On success
// Orphan/OrphanValue name another field of Claims whose lease has expired,
// if any: an abandoned claim for the caller to take over.
//
// For a claim, the family's pause register (Pause) is returned in
// Result.Pause whatever the outcome: the caller decides, over the
// majority, whether the work is paused. Where AlsoValue is set and the
// claim is new here (Status 1), Also, a plain lease of the family (a job
// lease), is set to AlsoValue with TTL where absent, in the same step,
// unless the node's clock is more than FreshMS past SentMS (the sender's
// clock when it sent the op: a request run late): Result.AlsoStatus 1
// where it was set.
//
// On Status 1 or 2 the counter Fence is set to max(Fence+1, N) and N
// (Result) is its new value; on Status 0 N (Result) is Fence's value as
// found. Every lease set on a node thus moves the node's counter up by at
// least one, so that nodes that saw the same acquisitions agree on the
// next token.
//
// Tomb: refused (Status 0, nothing changed, Value "") when the key Tomb
// exists (an undone acquisition's tombstone: redlock's undo).
//
// Claims are compared and returned as stored: wherever an op compares
// Claims[Field] with Value, "started:" + Value counts as Value (the
// claim is the lease's own either way), and a claim returned (Value of
// Status 2, Claim, OrphanValue) keeps its prefix.
type AcquireOp struct {
	Key, Value string
	TTL        int64
	Fence      string
	N          int64 // the proposed token
	Tomb       string

	Claims, Lives, Field string // claims only
	Pause                string // claims only: the family's pause register, read
	Also, AlsoValue      string // claims only: a plain lease taken with it
	SentMS, FreshMS      int64  // with Also: when sent (sender's clock) and how long it is fresh
}

// ExtendOp renews a lease: where it holds Value and has not expired
// (Lives[Field] for a claim, else Key), reset its expiry to TTL from now.
// Status 1 when it did. For a claim with Start set, where it did and
// Claims[Field] == Value, Claims[Field] := "started:" + Value: the claim's
// owner confirms that its work began.
//
// Where nothing holds the lease and the request is fresh (the store's
// clock at most FreshMS past SentMS; never with SentMS 0), it is spread:
// Status 2. For a plain lease: Key absent, then Key := Value PX TTL. For
// a claim: Lives[Field], Claims[Field] and Key (the done marker) all
// absent, then Claims[Field] := Value and Lives[Field] := Value live for
// TTL — the claim in its plain form even with Start: the next renewal
// confirms it there, and a spread run late, after the end missed that
// node, leaves a leftover rather than a started claim nothing ends. Else
// Status 0.
type ExtendOp struct {
	Key, Value           string
	TTL                  int64
	Claims, Lives, Field string // claims only
	Start                bool   // claims only: the work began (confirm it)
	SentMS, FreshMS      int64  // when sent (sender's clock) and how long it may spread
}

// ReleaseOp ends a lease. Where DoneTTL > 0 and Key already holds Done (a
// retry whose first answer was lost), nothing changes and Status is 1; so
// too, for a Taken claim, where neither Claims[Field] nor Lives[Field] is
// ours and Entry is in Log (the first attempt found the lease ours and
// added it; its marker has expired since).
// Otherwise, for a plain lease: with DoneTTL == 0 delete Key where it
// holds Value; with DoneTTL > 0 set Key := Done PX DoneTTL where Key holds
// Value or is absent. Status 1 where Key held Value, else 0.
//
// For a claim: the lease is ours when Claims[Field] == Value or
// Lives[Field] holds Value unexpired (Status 1, else 0); Lives[Field] is
// deleted where it holds Value. With DoneTTL == 0 Claims[Field] is
// deleted where it is Value. With DoneTTL > 0, where the claim is ours,
// absent, or another claim whose lease we hold (one we took over),
// Claims[Field] is deleted and Key := Done PX DoneTTL unless Key exists;
// there Entry (when set) is added to the family's log (the sorted set
// Log) with score N — for a Taken claim only where the lease is ours —
// and the log keeps its newest Keep entries.
//
// For a claim, in the same step whatever else happens: Also (when
// AlsoValue is set) is a plain lease of the same family (a job lease),
// deleted where it holds AlsoValue (Result.AlsoStatus 1 where it did,
// else 0); Record (when RecordN is not 0) is a record of the family,
// raised to RecordN where it is lower (as MaxSetOp).
//
// With TombTTL > 0, Tomb is set PX TombTTL first, whatever else it does
// (an undo's tombstone: redlock's undo).
type ReleaseOp struct {
	Key, Value    string
	Done          string
	DoneTTL       int64
	Tomb          string
	TombTTL       int64
	Claims, Lives string // claims only
	Field         string // claims only
	Log, Entry    string // claims only: the family's log and an entry for it
	N, Keep       int64  // claims only: the entry's score; entries the log keeps
	Also          string // claims only: a plain lease released with it
	AlsoValue     string
	Record        string // claims only: a record raised to RecordN with it
	RecordN       int64
	// Taken (claims only): the lease took another's claim over (a
	// settler's end). Its Entry is then added only where the lease is
	// ours, and a retry counts a node holding that Entry as its own.
	Taken bool
}

// PauseOp reads or writes a family's pause register at Key, which holds
// "<version>|<p or r>|<until ms>|<by>|<reason>" (p: paused until the
// instant, 0 for no end; r: resumed). Set it to Value where N, Value's
// version, is greater than the version it holds (Status 1), else Status
// 0; N = 0 only reads. Value (Result) is what it holds afterwards (""
// when never set).
type PauseOp struct {
	Key, Value string
	N          int64
}

// FenceOp sets the counter Key to N where it is lower (Status 1), else
// Status 0. N (Result) is the counter afterwards.
type FenceOp struct {
	Key string
	N   int64
}

// MaxSetOp raises the record Key to N where it is lower. No TTL. N
// (Result) is the record afterwards.
type MaxSetOp struct {
	Key string
	N   int64
}

// GetOp reads the integer record Key: N (Result), or Nil when absent.
// With Lease it reads a lease's key instead: Value is what it holds (a
// lease's or a done marker's value), Nil when absent or expired.
type GetOp struct {
	Key   string
	Lease bool
}

// PingOp asks the node to answer.
type PingOp struct{}

// TimeOp reads the node's clock: N (Result) is its time in microseconds
// since the Unix epoch (a Redis node's TIME). It reads no key.
type TimeOp struct{}

// LogOp reads the family's log at Key: its entries of score Since or
// more, newest first, at most Limit (Result.Log).
type LogOp struct {
	Key   string
	Since int64
	Limit int64
}

// LogAddOp adds to the family's log at Key: remove Value (when set), add
// Entry with score N, then remove the entries scored below Floor (when
// not 0) and all but the newest Keep (when Keep > 0); Status 1.
//
// Fenced (RecordN > 0, a lease's fencing token): first, where the register
// Record (a record of the family) holds more than RecordN, nothing changes
// and Status is 2 (the holder of a newer lease appended here); otherwise
// Record is raised to RecordN. IfAbsent: then, where the log holds an
// entry scored N, nothing more changes and Status is 0.
type LogAddOp struct {
	Key, Entry string
	N          int64  // the entry's score
	Value      string // an entry to replace
	Keep       int64
	Floor      int64
	Record     string
	RecordN    int64
	IfAbsent   bool
}

// ClaimsOp lists the fields of the claims hash Claims (Result.Fields).
type ClaimsOp struct {
	Claims string
}

// DoneOp reads the string keys Keys and answers, per key in order,
// whether it holds a done marker ("done|…"): Result.Fields[i] is the
// value of Keys[i] when it is one, else "". Unlike every other Op, its
// keys may have different hash tags (the claims of many jobs): it is a
// batch of plain reads, not one atomic step, and a Node may answer it key
// by key (a Redis node sends one MGET, or in a cluster one GET per key).
type DoneOp struct {
	Keys []string
}

func (AcquireOp) Kind() OpKind { return OpAcquire }
func (ExtendOp) Kind() OpKind  { return OpExtend }
func (ReleaseOp) Kind() OpKind { return OpRelease }
func (PauseOp) Kind() OpKind   { return OpPause }
func (FenceOp) Kind() OpKind   { return OpFence }
func (MaxSetOp) Kind() OpKind  { return OpMaxSet }
func (GetOp) Kind() OpKind     { return OpGet }
func (PingOp) Kind() OpKind    { return OpPing }
func (LogOp) Kind() OpKind     { return OpLog }
func (LogAddOp) Kind() OpKind  { return OpLogAdd }
func (ClaimsOp) Kind() OpKind  { return OpClaims }
func (DoneOp) Kind() OpKind    { return OpDone }
func (TimeOp) Kind() OpKind    { return OpTime }

func (AcquireOp) isOp() {}
func (ExtendOp) isOp()  {}
func (ReleaseOp) isOp() {}
func (PauseOp) isOp()   {}
func (FenceOp) isOp()   {}
func (MaxSetOp) isOp()  {}
func (GetOp) isOp()     {}
func (PingOp) isOp()    {}
func (LogOp) isOp()     {}
func (LogAddOp) isOp()  {}
func (ClaimsOp) isOp()  {}
func (DoneOp) isOp()    {}
func (TimeOp) isOp()    {}
