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
	op := Op{Kind: OpLog, Key: r.key(Key{Family: family, Name: logName}), N: since, Keep: int64(limit)}
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
