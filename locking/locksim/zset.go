package locksim

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
)

// The sorted sets behind a family's log (Lease.End,
// Store.AppendLog, Store.ReadLog), as Redis keeps them.

// zadd adds member with score to the sorted set k and keeps its newest
// keep members (ZADD, then ZREMRANGEBYRANK 0 -(keep+1)).
func (s *Store) zadd(k, member string, score, keep int64, now time.Time) {
	e, ok := s.get(k, now)
	if !ok || e.zset == nil {
		e = entry{zset: map[string]int64{}}
	}
	e.zset[member] = score
	if int64(len(e.zset)) > keep {
		all := newestFirst(e.zset, math.MinInt64, len(e.zset))
		for _, x := range all[keep:] {
			delete(e.zset, x.Value)
		}
	}
	s.kv[k] = e
}

// zhas reports whether member is in the sorted set k (ZSCORE).
func (s *Store) zhas(k, member string, now time.Time) bool {
	e, ok := s.get(k, now)
	_, in := e.zset[member]
	return ok && in
}

// newestFirst lists z's members of score since or more by score, highest
// first (ties: the greater member first, as ZREVRANGEBYSCORE), at most
// limit.
func newestFirst(z map[string]int64, since int64, limit int) []locking.LogEntry {
	var out []locking.LogEntry
	for m, sc := range z {
		if sc >= since {
			out = append(out, locking.LogEntry{Score: sc, Value: m})
		}
	}
	slices.SortFunc(out, func(a, b locking.LogEntry) int {
		if a.Score != b.Score {
			return cmp.Compare(b.Score, a.Score)
		}
		return strings.Compare(b.Value, a.Value)
	})
	return out[:min(len(out), limit)]
}

// logAdd is LogAddOp: refuse a fenced append (op.RecordN) where the
// register op.Record holds a newer token, else raise it; with op.IfAbsent
// change nothing more where an entry has the score; then remove op.Value
// (unless it is the entry itself), add the entry, then drop what is
// scored below op.Floor and all but the newest op.Keep (ZREM, ZADD,
// ZREMRANGEBYSCORE, ZREMRANGEBYRANK). It returns the Status.
func (s *Store) logAdd(op driver.LogAddOp, now time.Time) int64 {
	if op.RecordN != 0 {
		seen := s.num(op.Record, now)
		if seen > op.RecordN {
			return 2
		}
		if seen < op.RecordN {
			s.setStr(op.Record, strconv.FormatInt(op.RecordN, 10), 0, now)
		}
	}
	if op.IfAbsent {
		if e, ok := s.get(op.Key, now); ok {
			for _, sc := range e.zset {
				if sc == op.N {
					return 0
				}
			}
		}
	}
	if op.Value != "" && op.Value != op.Entry {
		if e, ok := s.get(op.Key, now); ok && e.zset != nil {
			delete(e.zset, op.Value)
		}
	}
	keep := op.Keep
	if keep <= 0 {
		keep = math.MaxInt64
	}
	s.zadd(op.Key, op.Entry, op.N, keep, now)
	if e, ok := s.get(op.Key, now); ok && op.Floor != 0 {
		for m, sc := range e.zset {
			if sc < op.Floor {
				delete(e.zset, m)
			}
		}
	}
	return 1
}
