package locksim

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Snapshot returns everything the store holds, one sorted line per live
// key, hash field and sorted-set member, with the time left of every TTL:
// two stores with the same snapshot answer every request alike at the same
// instant. The small-world checker (internal/smallworld) hashes it to
// recognise states it has seen.
func (s *Store) Snapshot() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var lines []string
	for k := range s.kv {
		e, ok := s.get(k, now)
		if !ok {
			continue
		}
		ttl := "-"
		if !e.expires.IsZero() {
			ttl = e.expires.Sub(now).String()
		}
		switch {
		case e.hash != nil:
			for f, v := range e.hash {
				lines = append(lines, fmt.Sprintf("%s[%s]=%s", k, f, v))
			}
		case e.zset != nil:
			for m, sc := range e.zset {
				lines = append(lines, fmt.Sprintf("%s{%s}=%d", k, m, sc))
			}
		default:
			lines = append(lines, fmt.Sprintf("%s=%s ttl %s", k, e.val, ttl))
		}
	}
	slices.Sort(lines)
	if s.skew != 0 {
		// Hash values hold deadlines the node judges by its clock: two
		// stores alike but for it answer differently.
		lines = append([]string{fmt.Sprintf("clock %+v", s.skew)}, lines...)
	}
	return strings.Join(lines, "\n")
}

// Clone returns a copy of the store, for trying requests on it without
// changing it.
func (s *Store) Clone() *Store {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &Store{name: s.name, kv: make(map[string]entry, len(s.kv)), skew: s.skew}
	for k, e := range s.kv {
		if e.hash != nil {
			e.hash = maps.Clone(e.hash)
		}
		if e.zset != nil {
			e.zset = maps.Clone(e.zset)
		}
		c.kv[k] = e
	}
	return c
}
