package driver

import (
	"cmp"
	"context"
	"slices"
)

// Store is the state a fleet of replicas shares beside its locks, kept in
// the same lock stores and under the same keys' families: each family's
// pause register, its log, its records and the list of its open claims.
// Every write goes to a majority and every read answers from one, so a
// write that succeeded is seen by every later read. A Store is safe for
// concurrent use.
type Store interface {
	// SetPause writes the family's pause state (Pause.Paused false: resumed)
	// on a majority, above every version found, and returns what the
	// stores now hold. While a pause is active, Claim in the family fails
	// with a *PausedError. ReadPause returns the newest state on a
	// majority.
	SetPause(ctx context.Context, family string, p Pause) (Pause, error)
	ReadPause(ctx context.Context, family string) (Pause, error)

	// AppendLog adds a.Entry to the family's log on a majority (removing
	// a.Replace in the same step, and trimming as a says): for entries
	// that do not end a claim (those go with its end, Ending.Entry), such
	// as a reconciler's verdicts or replica heartbeats. Adding an
	// identical entry twice keeps one. A fenced append (a.Token) fails with
	// ErrStaleToken, and one with a.IfAbsent with ErrLogHasEntry, when it
	// was not made on a majority (see LogAppend).
	AppendLog(ctx context.Context, family string, a LogAppend) error
	// ReadLog returns the family's log (AppendLog, Ending.Entry) with a
	// score of since or more, newest first, at most limit: the union of
	// what a majority of the stores hold.
	ReadLog(ctx context.Context, family string, since int64, limit int) ([]LogEntry, error)

	// AdvanceRecord raises the family's named record to at least v
	// (max-assign) on a majority. Records outlive leases (they have no
	// TTL). ReadRecord returns the largest value seen on a majority (0 when
	// never written).
	AdvanceRecord(ctx context.Context, key Key, v int64) error
	ReadRecord(ctx context.Context, key Key) (int64, error)

	// ReadClaims returns the keys of the family's open claims (Claim, not
	// yet ended): the union of what a majority of the stores hold, sorted.
	ReadClaims(ctx context.Context, family string) ([]Key, error)

	// ReadLease reads a lease's key (one taken with Acquire, such as a
	// job's lease) on every store and answers from a majority: a
	// *HeldError naming the holder of a live lease held there on any of
	// them (Done set when all that any holds is a done marker), nil when
	// the key is free on every store that answered. Like ReadClaims it
	// reads the union of a majority: a lease acquired before the read
	// began is seen, whatever majority answers.
	ReadLease(ctx context.Context, key Key) (*HeldError, error)

	// Handled reports, per key, whether one store holds a done marker
	// there: the claim was ended as handled (Lease.End with a done note).
	// Unlike every other read it asks a single store (the next reachable
	// one, in turn, and another when it does not answer), one read per key
	// in one round trip: it is a hint, for a caller that wants to skip
	// work already done elsewhere before it tries a Claim, and the Claim
	// remains the only proof. false means "not seen as handled": the key
	// is absent, held by a live claim, or its marker is not (yet) on the
	// store asked. An error (no store answered) tells nothing either.
	Handled(ctx context.Context, keys []Key) ([]bool, error)
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

// MergeLogs is the union of logs, newest first (ties by value), at most
// limit.
func MergeLogs(logs [][]LogEntry, limit int) []LogEntry {
	seen := map[LogEntry]bool{}
	var out []LogEntry
	for _, l := range logs {
		for _, e := range l {
			if !seen[e] {
				seen[e] = true
				out = append(out, e)
			}
		}
	}
	slices.SortFunc(out, newestFirst)
	return out[:min(len(out), limit)]
}

// InsertLog adds e to log, a log held newest first as MergeLogs returns
// it, and keeps at most limit entries: MergeLogs([][]LogEntry{{e}, log},
// limit), in place. A store that adds an entry at every run's end pays for
// the entry, not for the log kept (DefaultHistoryKeep entries a job).
func InsertLog(log []LogEntry, e LogEntry, limit int) []LogEntry {
	i, found := slices.BinarySearchFunc(log, e, newestFirst)
	if !found {
		log = slices.Insert(log, i, e)
	}
	return log[:max(0, min(len(log), limit))]
}

// newestFirst orders a log: by score, newest first, then by value, the
// greatest first.
func newestFirst(a, b LogEntry) int {
	if a.Score != b.Score {
		return cmp.Compare(b.Score, a.Score)
	}
	return cmp.Compare(b.Value, a.Value)
}

// TrimLog applies a's bounds to a log held newest first.
func TrimLog(log []LogEntry, a LogAppend) []LogEntry {
	out := log[:0]
	for _, e := range log {
		if a.Floor == 0 || e.Score >= a.Floor {
			out = append(out, e)
		}
	}
	if a.Keep > 0 && len(out) > a.Keep {
		out = out[:a.Keep]
	}
	return out
}
