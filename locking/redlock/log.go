package redlock

import (
	"context"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/internal/wire"
)

// ReadLog reads the family's log on every node and merges what a majority
// answered: an entry written with a done marker that reached a majority is
// on at least one of them.
func (r *store) ReadLog(ctx context.Context, family string, since int64, limit int) ([]locking.LogEntry, error) {
	res := make([]driver.Result, len(r.nodes))
	errs := make([]error, len(r.nodes))
	op := driver.LogOp{Key: r.key(locking.Key{Family: family, Name: wire.LogName}), Since: since, Limit: int64(limit)}
	r.round(ctx, all(op), res, errs)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if got := r.answered(errs); got < r.quorum {
		return nil, &locking.QuorumError{Op: "log", Need: r.quorum, Got: got, Err: r.nodeErrs(errs)}
	}
	var logs [][]locking.LogEntry
	for i, rep := range res {
		if errs[i] == nil {
			logs = append(logs, rep.Log)
		}
	}
	return driver.MergeLogs(logs, limit), nil
}

// AppendLog adds a.Entry to the family's log on a majority.
func (r *store) AppendLog(ctx context.Context, family string, a locking.LogAppend) error {
	res := make([]driver.Result, len(r.nodes))
	errs := make([]error, len(r.nodes))
	op := driver.LogAddOp{Key: r.key(locking.Key{Family: family, Name: wire.LogName}), Entry: a.Entry.Value, N: a.Entry.Score,
		Value: a.Replace, Keep: int64(a.Keep), Floor: a.Floor, IfAbsent: a.IfAbsent}
	if a.Token != 0 {
		op.Record, op.RecordN = r.key(locking.Key{Family: family, Name: a.Fence}), int64(a.Token)
	}
	r.round(ctx, all(op), res, errs)
	if err := ctx.Err(); err != nil {
		return err
	}
	if got := r.answered(errs); got < r.quorum {
		return &locking.QuorumError{Op: "log", Need: r.quorum, Got: got, Err: r.nodeErrs(errs)}
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
		return locking.ErrStaleToken
	}
	return locking.ErrLogHasEntry
}

// ReadClaims lists the family's open claims on every node and returns the
// union of what a majority answered.
func (r *store) ReadClaims(ctx context.Context, family string) ([]locking.Key, error) {
	res := make([]driver.Result, len(r.nodes))
	errs := make([]error, len(r.nodes))
	op := driver.ClaimsOp{Claims: r.key(locking.Key{Family: family, Name: wire.ClaimsName})}
	r.round(ctx, all(op), res, errs)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if got := r.answered(errs); got < r.quorum {
		return nil, &locking.QuorumError{Op: "claims", Need: r.quorum, Got: got, Err: r.nodeErrs(errs)}
	}
	var names []string
	for i, rep := range res {
		if errs[i] == nil {
			names = append(names, rep.Fields...)
		}
	}
	return driver.ClaimKeys(family, names), nil
}
