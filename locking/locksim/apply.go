package locksim

import (
	"strconv"
	"time"

	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/internal/wire"
)

// The lease ops as Store.Apply runs them, with the store's lock held.

// acquire applies an AcquireOp.
func (s *Store) acquire(op driver.AcquireOp, now time.Time, nowMS int64) driver.Result {
	fence := s.num(op.Fence, now)
	if _, undone := s.getStr(op.Tomb, now); op.Tomb != "" && undone {
		return driver.Result{N: fence}
	}
	res := driver.Result{Status: 1, N: fence}
	if op.Field != "" {
		pause, _ := s.getStr(op.Pause, now)
		res.Pause = pause
		if done, ok := s.getStr(op.Key, now); ok {
			return driver.Result{Value: done, N: fence, Pause: pause}
		}
		if l, ok := s.hget(op.Lives, op.Field, now); ok {
			if v, exp := parseLive(l); exp > nowMS {
				c, _ := s.hget(op.Claims, op.Field, now)
				return driver.Result{Value: v, N: fence, Pause: pause, Claim: c}
			}
		}
		if c, ok := s.hget(op.Claims, op.Field, now); ok {
			res.Status, res.Value = 2, c
		} else {
			s.hset(op.Claims, op.Field, op.Value, now)
		}
		s.hset(op.Lives, op.Field, op.Value+"|"+strconv.FormatInt(nowMS+op.TTL, 10), now)
		if _, held := s.getStr(op.Also, now); res.Status == 1 && op.AlsoValue != "" && !held && nowMS-op.SentMS <= op.FreshMS {
			s.setStr(op.Also, op.AlsoValue, ms(op.TTL), now)
			res.AlsoStatus = 1
		}
		if e, ok := s.get(op.Claims, now); ok {
			res.Orphan, res.OrphanValue = s.orphan(e.hash, op, now)
		}
	} else {
		if v, ok := s.getStr(op.Key, now); ok {
			return driver.Result{Value: v, N: fence}
		}
		s.setStr(op.Key, op.Value, ms(op.TTL), now)
	}
	res.N = max(fence+1, op.N)
	s.setStr(op.Fence, strconv.FormatInt(res.N, 10), 0, now)
	return res
}

// extend applies an ExtendOp.
func (s *Store) extend(op driver.ExtendOp, now time.Time, nowMS int64) driver.Result {
	fresh := op.SentMS != 0 && nowMS-op.SentMS <= op.FreshMS
	if op.Field != "" {
		l, ok := s.hget(op.Lives, op.Field, now)
		if !ok {
			return s.spreadClaim(op, fresh, now, nowMS)
		}
		v, exp := parseLive(l)
		if v != op.Value || exp <= nowMS {
			return driver.Result{}
		}
		s.hset(op.Lives, op.Field, op.Value+"|"+strconv.FormatInt(nowMS+op.TTL, 10), now)
		if c, _ := s.hget(op.Claims, op.Field, now); op.Start && c == op.Value {
			s.hset(op.Claims, op.Field, wire.StartedPrefix+op.Value, now)
		}
		return driver.Result{Status: 1}
	}
	v, ok := s.getStr(op.Key, now)
	switch {
	case ok && v == op.Value:
		s.setStr(op.Key, v, ms(op.TTL), now)
		return driver.Result{Status: 1}
	case !s.exists(op.Key, now) && fresh:
		s.setStr(op.Key, op.Value, ms(op.TTL), now)
		return driver.Result{Status: 2}
	}
	return driver.Result{}
}

// spreadClaim is extend's spread of a claim to a store where its lease
// is absent: where neither a claim nor a done marker is either.
func (s *Store) spreadClaim(op driver.ExtendOp, fresh bool, now time.Time, nowMS int64) driver.Result {
	if _, claimed := s.hget(op.Claims, op.Field, now); !fresh || claimed || s.exists(op.Key, now) {
		return driver.Result{}
	}
	s.hset(op.Claims, op.Field, op.Value, now) // plain, even with Start: ExtendOp's doc
	s.hset(op.Lives, op.Field, op.Value+"|"+strconv.FormatInt(nowMS+op.TTL, 10), now)
	return driver.Result{Status: 2}
}

// releaseAll applies a ReleaseOp: its Also and Record parts, then release.
func (s *Store) releaseAll(op driver.ReleaseOp, now time.Time, nowMS int64) driver.Result {
	if op.TombTTL > 0 {
		s.setStr(op.Tomb, "1", ms(op.TombTTL), now)
	}
	var also int64
	if op.Field != "" && op.AlsoValue != "" {
		if v, ok := s.getStr(op.Also, now); ok && v == op.AlsoValue {
			delete(s.kv, op.Also)
			also = 1
		}
	}
	if op.Field != "" && op.RecordN != 0 && op.RecordN > s.num(op.Record, now) {
		s.setStr(op.Record, strconv.FormatInt(op.RecordN, 10), 0, now)
	}
	res := s.release(op, now, nowMS)
	res.AlsoStatus = also
	return res
}

// raise sets the integer at k to n where it is lower: Status 1 where it
// did, N its value afterwards.
func (s *Store) raise(k string, n int64, now time.Time) driver.Result {
	res := driver.Result{N: s.num(k, now)}
	if n > res.N {
		s.setStr(k, strconv.FormatInt(n, 10), 0, now)
		res.N, res.Status = n, 1
	}
	return res
}

// release is a ReleaseOp without its Also part.
func (s *Store) release(op driver.ReleaseOp, now time.Time, nowMS int64) driver.Result {
	if v, ok := s.getStr(op.Key, now); op.DoneTTL > 0 && ok && v == op.Done {
		return driver.Result{Status: 1}
	}
	if op.Field == "" {
		cur, ok := s.getStr(op.Key, now)
		if ok && cur == op.Value {
			if op.DoneTTL > 0 {
				s.setStr(op.Key, op.Done, ms(op.DoneTTL), now)
			} else {
				delete(s.kv, op.Key)
			}
			return driver.Result{Status: 1}
		}
		if !ok && op.DoneTTL > 0 {
			s.setStr(op.Key, op.Done, ms(op.DoneTTL), now)
		}
		return driver.Result{}
	}
	claim, claimOK := s.hget(op.Claims, op.Field, now)
	claimOurs := claimOK && (claim == op.Value || claim == wire.StartedPrefix+op.Value)
	l, liveOK := s.hget(op.Lives, op.Field, now)
	v, exp := parseLive(l)
	liveMine := liveOK && v == op.Value
	if op.DoneTTL > 0 && op.Taken && !claimOurs && !liveMine && op.Entry != "" && s.zhas(op.Log, op.Entry, now) {
		// A settler's entry is added only where its lease was ours: a
		// retry of an end that landed, its marker expired since.
		return driver.Result{Status: 1}
	}
	liveOurs := false
	if liveMine {
		s.hdel(op.Lives, op.Field, now)
		liveOurs = exp > nowMS
	}
	if op.DoneTTL > 0 {
		if claimOurs || !claimOK || liveOurs {
			if claimOK {
				s.hdel(op.Claims, op.Field, now)
			}
			if _, exists := s.get(op.Key, now); !exists {
				s.setStr(op.Key, op.Done, ms(op.DoneTTL), now)
			}
			if op.Entry != "" && (claimOurs || liveOurs || !op.Taken) {
				s.zadd(op.Log, op.Entry, op.N, op.Keep, now)
			}
		}
	} else if claimOurs {
		s.hdel(op.Claims, op.Field, now)
	}
	if claimOurs || liveOurs {
		return driver.Result{Status: 1}
	}
	return driver.Result{}
}
