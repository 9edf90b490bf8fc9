package locking

import (
	"context"
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
