package locking

import (
	"context"
	"strings"
	"sync"
	"time"
)

// NewLocal returns a Locker that keeps its locks in this process. It has
// the same semantics as Redlock — TTLs measured on opt.Clock, done markers,
// fencing tokens, records — so a scheduler cannot tell them apart, but it
// coordinates nothing beyond this process: it is for a single replica with
// no Redis. Its state is lost when the process exits.
func NewLocal(opt Options) Locker {
	opt = opt.withDefaults()
	return newLocker(&localBackend{
		clock:   opt.Clock,
		keys:    make(map[Key]localEntry),
		fences:  make(map[string]uint64),
		records: make(map[Key]int64),
		sweepAt: localSweepMin,
	}, opt)
}

const localSweepMin = 1024

type localEntry struct {
	value   string
	expires time.Time
}

type localBackend struct {
	clock   Clock
	mu      sync.Mutex
	keys    map[Key]localEntry
	fences  map[string]uint64 // by family
	records map[Key]int64
	sweepAt int // sweep expired keys when the map grows past this
}

// live returns key's entry if it exists and has not expired.
func (b *localBackend) live(key Key, now time.Time) (localEntry, bool) {
	e, ok := b.keys[key]
	if ok && !now.Before(e.expires) {
		delete(b.keys, key)
		return localEntry{}, false
	}
	return e, ok
}

func (b *localBackend) sweep(now time.Time) {
	if len(b.keys) < b.sweepAt {
		return
	}
	for k, e := range b.keys {
		if !now.Before(e.expires) {
			delete(b.keys, k)
		}
	}
	b.sweepAt = max(localSweepMin, 2*len(b.keys))
}

func (b *localBackend) acquire(ctx context.Context, s leaseSpec) (grant, error) {
	if err := ctx.Err(); err != nil {
		return grant{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	b.sweep(now)
	var g grant
	if s.hold > 0 {
		// A claim: as OpAcquire with Hold > 0.
		lk := liveKey(s.key)
		if e, ok := b.live(lk, now); ok {
			return grant{}, parseHeld(s.key, e.value)
		}
		if e, ok := b.live(s.key, now); ok {
			if strings.HasPrefix(e.value, donePrefix) {
				return grant{}, parseHeld(s.key, e.value)
			}
			g.abandoned = parseAbandoned(s.key, e.value)
		} else {
			b.keys[s.key] = localEntry{value: s.value, expires: now.Add(s.hold)}
		}
		b.keys[lk] = localEntry{value: s.value, expires: now.Add(s.ttl)}
	} else {
		if e, ok := b.live(s.key, now); ok {
			return grant{}, parseHeld(s.key, e.value)
		}
		b.keys[s.key] = localEntry{value: s.value, expires: now.Add(s.ttl)}
	}
	b.fences[s.key.Family]++
	g.token = b.fences[s.key.Family]
	return g, nil
}

// leaseKey is where s's lease lives: the live key of a claim, else the key.
func leaseKey(s leaseSpec) Key {
	if s.hold > 0 {
		return liveKey(s.key)
	}
	return s.key
}

func (b *localBackend) extend(ctx context.Context, s leaseSpec) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	lk := leaseKey(s)
	if e, ok := b.live(lk, now); !ok || e.value != s.value {
		return ErrLockLost
	}
	b.keys[lk] = localEntry{value: s.value, expires: now.Add(s.ttl)}
	if s.hold > 0 {
		if e, ok := b.live(s.key, now); ok && e.value == s.value {
			b.keys[s.key] = localEntry{value: s.value, expires: now.Add(s.hold)}
		}
	}
	return nil
}

func (b *localBackend) release(ctx context.Context, s leaseSpec, done string, doneTTL time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	// As OpRelease.
	now := b.clock.Now()
	cur, curOK := b.live(s.key, now)
	ours := curOK && cur.value == s.value
	took := false
	if s.hold > 0 {
		lk := liveKey(s.key)
		if e, ok := b.live(lk, now); ok && e.value == s.value {
			delete(b.keys, lk)
			took = !ours && curOK && !strings.HasPrefix(cur.value, donePrefix)
			ours = true
		}
	}
	switch {
	case doneTTL > 0:
		if (curOK && cur.value == s.value) || !curOK || took {
			b.keys[s.key] = localEntry{value: done, expires: now.Add(doneTTL)}
		}
	case curOK && cur.value == s.value:
		delete(b.keys, s.key)
	}
	if !ours {
		return ErrLockLost
	}
	return nil
}

func (b *localBackend) advanceRecord(ctx context.Context, key Key, v int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if v > b.records[key] {
		b.records[key] = v
	}
	return nil
}

func (b *localBackend) readRecord(ctx context.Context, key Key) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.records[key], nil
}

func (b *localBackend) ping(ctx context.Context) ([]NodeStatus, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return []NodeStatus{{Addr: "local", Up: true}}, nil
}

func (b *localBackend) mode() string { return "local" }
func (b *localBackend) close() error { return nil }
