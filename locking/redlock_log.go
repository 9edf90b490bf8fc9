package locking

import (
	"context"
	"slices"
)

// readLog reads the family's log on every node and merges what a majority
// answered: an entry written with a done marker that reached a majority is
// on at least one of them.
func (r *redlock) readLog(ctx context.Context, family string, since int64, limit int) ([]LogEntry, error) {
	res := make([]Result, len(r.nodes))
	errs := make([]error, len(r.nodes))
	op := LogOp{Key: r.key(Key{Family: family, Name: logName}), Since: since, Limit: int64(limit)}
	r.round(ctx, all(op), res, errs)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if got := r.answered(errs); got < r.quorum {
		return nil, &QuorumError{Op: "log", Need: r.quorum, Got: got, Err: r.nodeErrs(errs)}
	}
	var logs [][]LogEntry
	for i, rep := range res {
		if errs[i] == nil {
			logs = append(logs, rep.Log)
		}
	}
	return mergeLogs(logs, limit), nil
}

// mergeLogs is the union of logs, newest first (ties by value), at most
// limit.
func mergeLogs(logs [][]LogEntry, limit int) []LogEntry {
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

// appendLog adds a.Entry to the family's log on a majority.
func (r *redlock) appendLog(ctx context.Context, family string, a LogAppend) error {
	res := make([]Result, len(r.nodes))
	errs := make([]error, len(r.nodes))
	op := LogAddOp{Key: r.key(Key{Family: family, Name: logName}), Entry: a.Entry.Value, N: a.Entry.Score,
		Value: a.Replace, Keep: int64(a.Keep), Floor: a.Floor, IfAbsent: a.IfAbsent}
	if a.Token != 0 {
		op.Record, op.RecordN = r.key(Key{Family: family, Name: a.Fence}), int64(a.Token)
	}
	r.round(ctx, all(op), res, errs)
	if err := ctx.Err(); err != nil {
		return err
	}
	if got := r.answered(errs); got < r.quorum {
		return &QuorumError{Op: "log", Need: r.quorum, Got: got, Err: r.nodeErrs(errs)}
	}
	var made, fenced int
	for i, rep := range res {
		if errs[i] == nil {
			switch rep.Status {
			case logAdded:
				made++
			case logFenced:
				fenced++
			}
		}
	}
	return appendVerdict(made, fenced, r.quorum)
}

// LogAddOp's answers (Result.Status).
const (
	logPresent = 0 // IfAbsent: an entry of the score was there; nothing changed
	logAdded   = 1
	logFenced  = 2 // the fence register held a newer token; nothing changed
)

// appendVerdict is AppendLog's outcome from the stores that answered: made
// on a majority, or refused by a newer token somewhere, or by entries
// already there.
func appendVerdict(made, fenced, quorum int) error {
	switch {
	case made >= quorum:
		return nil
	case fenced > 0:
		return ErrStaleToken
	}
	return ErrLogHasEntry
}

// readClaims lists the family's open claims on every node and returns the
// union of what a majority answered.
func (r *redlock) readClaims(ctx context.Context, family string) ([]Key, error) {
	res := make([]Result, len(r.nodes))
	errs := make([]error, len(r.nodes))
	op := ClaimsOp{Claims: r.key(Key{Family: family, Name: claimsName})}
	r.round(ctx, all(op), res, errs)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if got := r.answered(errs); got < r.quorum {
		return nil, &QuorumError{Op: "claims", Need: r.quorum, Got: got, Err: r.nodeErrs(errs)}
	}
	var names []string
	for i, rep := range res {
		if errs[i] == nil {
			names = append(names, rep.Fields...)
		}
	}
	return claimKeys(family, names), nil
}

// claimKeys turns claim fields (key names) into sorted, distinct keys.
func claimKeys(family string, names []string) []Key {
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
