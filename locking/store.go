package locking

import (
	"context"
	"fmt"
	"slices"

	"github.com/slotlock/slotlock/locking/internal/wire"
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

// Backend is a Locker and the Store on the same lock stores: what
// redlock.New and NewLocal return. They belong together: a claim reads
// its family's pause register (Grant.Pause) and Lease.End writes its log
// and records in the same step on each store.
type Backend interface {
	Locker
	Store
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

func (l *locker) AdvanceRecord(ctx context.Context, key Key, v int64) error {
	if l.closed.Load() {
		return ErrClosed
	}
	return ctxOr(ctx, l.b.AdvanceRecord(ctx, key, v))
}

func (l *locker) ReadRecord(ctx context.Context, key Key) (int64, error) {
	if l.closed.Load() {
		return 0, ErrClosed
	}
	v, err := l.b.ReadRecord(ctx, key)
	return v, ctxOr(ctx, err)
}

func (l *locker) SetPause(ctx context.Context, family string, p Pause) (Pause, error) {
	if err := CheckKey(Key{Family: family, Name: wire.PauseName + "-check"}); err != nil {
		return Pause{}, err
	}
	if l.closed.Load() {
		return Pause{}, ErrClosed
	}
	got, err := l.b.SetPause(ctx, family, p)
	return got, ctxOr(ctx, err)
}

func (l *locker) ReadPause(ctx context.Context, family string) (Pause, error) {
	if err := CheckKey(Key{Family: family, Name: wire.PauseName + "-check"}); err != nil {
		return Pause{}, err
	}
	if l.closed.Load() {
		return Pause{}, ErrClosed
	}
	got, err := l.b.ReadPause(ctx, family)
	return got, ctxOr(ctx, err)
}

func (l *locker) ReadLog(ctx context.Context, family string, since int64, limit int) ([]LogEntry, error) {
	if err := CheckKey(Key{Family: family, Name: wire.LogName + "-check"}); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	if l.closed.Load() {
		return nil, ErrClosed
	}
	entries, err := l.b.ReadLog(ctx, family, since, limit)
	return entries, ctxOr(ctx, err)
}

func (l *locker) AppendLog(ctx context.Context, family string, a LogAppend) error {
	if err := CheckKey(Key{Family: family, Name: wire.LogName + "-check"}); err != nil {
		return err
	}
	if a.Keep < 0 {
		return fmt.Errorf("locking: append to the log of %s: keep %d is negative", family, a.Keep)
	}
	if a.Token != 0 {
		if err := CheckRecord(Key{Family: family, Name: a.Fence}, int64(min(a.Token, wire.MaxRecord+1))); err != nil {
			return fmt.Errorf("locking: append to the log of %s: fence: %w", family, err)
		}
	}
	if l.closed.Load() {
		return ErrClosed
	}
	return ctxOr(ctx, l.b.AppendLog(ctx, family, a))
}

func (l *locker) ReadClaims(ctx context.Context, family string) ([]Key, error) {
	if err := CheckKey(Key{Family: family, Name: wire.ClaimsName + "-check"}); err != nil {
		return nil, err
	}
	if l.closed.Load() {
		return nil, ErrClosed
	}
	keys, err := l.b.ReadClaims(ctx, family)
	return keys, ctxOr(ctx, err)
}

func (l *locker) Handled(ctx context.Context, keys []Key) ([]bool, error) {
	for _, k := range keys {
		if err := CheckKey(k); err != nil {
			return nil, err
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	if l.closed.Load() {
		return nil, ErrClosed
	}
	got, err := l.b.Handled(ctx, keys)
	return got, ctxOr(ctx, err)
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
	slices.SortFunc(out, func(a, b LogEntry) int {
		if a.Score != b.Score {
			return int(b.Score - a.Score)
		}
		if a.Value < b.Value {
			return 1
		}
		if a.Value > b.Value {
			return -1
		}
		return 0
	})
	return out[:min(len(out), limit)]
}

// ClaimKeys turns claim fields (key names) into sorted, distinct keys.
func ClaimKeys(family string, names []string) []Key {
	slices.Sort(names)
	names = slices.Compact(names)
	out := make([]Key, 0, len(names))
	for _, n := range names {
		out = append(out, Key{Family: family, Name: n})
	}
	return out
}

// trimLog applies a's bounds to a log held newest first.
func trimLog(log []LogEntry, a LogAppend) []LogEntry {
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

// CheckRecord reports whether v can be written to the record key.
func CheckRecord(key Key, v int64) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	if v > wire.MaxRecord || v < -wire.MaxRecord {
		return fmt.Errorf("locking: record %s: value %d out of range (|v| <= 2^53)", key, v)
	}
	return nil
}
