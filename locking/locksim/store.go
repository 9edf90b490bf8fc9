// Package locksim simulates the lock stores of a Redlock deployment in one
// process: Stores with the exact semantics of the Lua scripts behind
// driver.Node (the conformance suite in locking/lockingtest runs against
// them as against real Redis), and a Net that joins replicas to stores
// through links that can lose, delay or hold requests. Time is the
// process's clock, so inside a testing/synctest bubble everything runs on
// virtual time. The simulation of the whole protocol (scheduler/sim_test.go)
// is built on it.
package locksim

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/internal/wire"
)

// Store is one simulated Redis node's data.
type Store struct {
	name string
	mu   sync.Mutex
	kv   map[string]entry
	// skew is added to the process clock to give this node's clock (expiry
	// and TIME).
	skew time.Duration
}

type entry struct {
	val     string
	hash    map[string]string // a hash key (claims, lives)
	zset    map[string]int64  // a sorted set (a family's log): member -> score
	expires time.Time         // zero: no TTL
}

// NewStore returns an empty store.
func NewStore(name string) *Store {
	return &Store{name: name, kv: make(map[string]entry)}
}

// Name is the store's address in errors and logs.
func (s *Store) Name() string { return s.name }

// Wipe loses every key, as a Redis that restarts without persistence.
func (s *Store) Wipe() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kv = make(map[string]entry)
}

// StepClock steps the node's wall clock by d, as a time source that
// steps it: its TIME and its keys' expiry move with it (keys keep their
// absolute deadlines), so a step forward ends leases early and a step
// back keeps them late. The redistest counterpart is Node.StepClock.
func (s *Store) StepClock(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.skew += d
}

// Restore makes the store hold what from holds, TTL deadlines and all, as
// a Redis failing over to a replica that had not received its latest
// writes: what it was told since from's state is lost, and what it
// deleted since is back. from is copied; it stays the caller's.
func (s *Store) Restore(from *Store) {
	c := from.Clone()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kv = c.kv
}

// Dump returns every live key with its value (hashes as field=value
// lists), for tracing a simulation.
func (s *Store) Dump() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	out := map[string]string{}
	for k := range s.kv {
		e, ok := s.get(k, now)
		if !ok {
			continue
		}
		if e.hash == nil {
			out[k] = e.val
			continue
		}
		var fs []string
		for f, v := range e.hash {
			fs = append(fs, f+"="+v)
		}
		slices.Sort(fs)
		out[k] = strings.Join(fs, " ")
	}
	return out
}

// Len is the number of live keys (for tests of bounded state).
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	n := 0
	for _, e := range s.kv {
		if e.expires.IsZero() || now.Before(e.expires) {
			n++
		}
	}
	return n
}

func (s *Store) now() time.Time { return time.Now().Add(s.skew) }

func (s *Store) get(k string, now time.Time) (entry, bool) {
	e, ok := s.kv[k]
	if ok && !e.expires.IsZero() && !now.Before(e.expires) {
		delete(s.kv, k)
		return entry{}, false
	}
	return e, ok
}

// exists reports whether k holds anything (EXISTS).
func (s *Store) exists(k string, now time.Time) bool {
	_, ok := s.get(k, now)
	return ok
}

func (s *Store) getStr(k string, now time.Time) (string, bool) {
	e, ok := s.get(k, now)
	if !ok || e.hash != nil {
		return "", false
	}
	return e.val, true
}

func (s *Store) setStr(k, v string, ttl time.Duration, now time.Time) {
	e := entry{val: v}
	if ttl > 0 {
		e.expires = now.Add(ttl)
	}
	s.kv[k] = e
}

func (s *Store) hget(k, f string, now time.Time) (string, bool) {
	e, ok := s.get(k, now)
	if !ok {
		return "", false
	}
	v, ok := e.hash[f]
	return v, ok
}

func (s *Store) hset(k, f, v string, now time.Time) {
	e, ok := s.get(k, now)
	if !ok || e.hash == nil {
		e = entry{hash: map[string]string{}}
	}
	e.hash[f] = v
	s.kv[k] = e
}

func (s *Store) hdel(k, f string, now time.Time) {
	e, ok := s.get(k, now)
	if !ok || e.hash == nil {
		return
	}
	delete(e.hash, f)
	if len(e.hash) == 0 {
		delete(s.kv, k)
	}
}

func (s *Store) num(k string, now time.Time) int64 {
	v, _ := s.getStr(k, now)
	n, _ := strconv.ParseInt(v, 10, 64)
	return n
}

// live parses a lives-hash value "<value>|<expiry ms>".
func parseLive(v string) (string, int64) {
	i := strings.LastIndexByte(v, '|')
	if i < 0 {
		return v, 0
	}
	ms, _ := strconv.ParseInt(v[i+1:], 10, 64)
	return v[:i], ms
}

func ms(d int64) time.Duration { return time.Duration(d) * time.Millisecond }

// orphan picks, as the script does, one claim of claims other than
// op.Field whose lease has expired: sorted by field, indexed by the first
// 24 bits of op.Value's token.
func (s *Store) orphan(claims map[string]string, op driver.AcquireOp, now time.Time) (string, string) {
	var fields []string
	for f := range claims {
		if f == op.Field {
			continue
		}
		l, ok := s.hget(op.Lives, f, now)
		if _, exp := parseLive(l); !ok || exp <= now.UnixMilli() {
			fields = append(fields, f)
		}
	}
	if len(fields) == 0 {
		return "", ""
	}
	slices.Sort(fields)
	n, _ := strconv.ParseUint(op.Value[:min(6, len(op.Value))], 16, 64)
	f := fields[n%uint64(len(fields))]
	return f, claims[f]
}

// Apply runs op atomically with the semantics documented on its type
// (driver.Op): the ops that write here, the reads in read.
func (s *Store) Apply(op driver.Op) (driver.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	nowMS := now.UnixMilli()
	switch op := op.(type) {
	case driver.AcquireOp:
		return s.acquire(op, now, nowMS), nil

	case driver.ExtendOp:
		return s.extend(op, now, nowMS), nil

	case driver.ReleaseOp:
		return s.releaseAll(op, now, nowMS), nil

	case driver.PauseOp:
		return s.pause(op, now), nil

	case driver.FenceOp:
		// Raise the counter to N where it is lower, and answer whether it
		// did (Status).
		return s.raise(op.Key, op.N, now), nil

	case driver.MaxSetOp:
		// Raise the record to N where it is lower; only its value is
		// answered.
		res := s.raise(op.Key, op.N, now)
		res.Status = 0
		return res, nil

	case driver.LogAddOp:
		return driver.Result{Status: s.logAdd(op, now)}, nil
	}
	return s.read(op, now)
}

// pause sets the pause register to op.Value where op.N is newer than
// the version it holds.
func (s *Store) pause(op driver.PauseOp, now time.Time) driver.Result {
	cur, _ := s.getStr(op.Key, now)
	v, _, _ := strings.Cut(cur, "|")
	version, _ := strconv.ParseInt(v, 10, 64)
	if op.N > version {
		s.setStr(op.Key, op.Value, 0, now)
		return driver.Result{Status: 1, Value: op.Value}
	}
	return driver.Result{Value: cur}
}

// read answers the ops that change nothing (s.mu held).
func (s *Store) read(op driver.Op, now time.Time) (driver.Result, error) {
	switch op := op.(type) {
	case driver.GetOp:
		v, ok := s.getStr(op.Key, now)
		if !ok {
			return driver.Result{Nil: true}, nil
		}
		if op.Lease {
			return driver.Result{Value: v}, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return driver.Result{}, errors.New("ERR value is not an integer")
		}
		return driver.Result{N: n}, nil

	case driver.PingOp:
		return driver.Result{}, nil

	case driver.TimeOp:
		return driver.Result{N: now.UnixMicro()}, nil

	case driver.ClaimsOp:
		e, _ := s.get(op.Claims, now)
		var fields []string
		for f := range e.hash {
			fields = append(fields, f)
		}
		return driver.Result{Fields: fields}, nil

	case driver.DoneOp:
		fields := make([]string, len(op.Keys))
		for i, k := range op.Keys {
			if v, ok := s.getStr(k, now); ok && strings.HasPrefix(v, wire.DonePrefix) {
				fields[i] = v
			}
		}
		return driver.Result{Fields: fields}, nil

	case driver.LogOp:
		e, _ := s.get(op.Key, now)
		return driver.Result{Log: newestFirst(e.zset, op.Since, int(op.Limit))}, nil
	}
	return driver.Result{}, errors.New("ERR unknown op")
}
