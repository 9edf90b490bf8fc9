package locking

import (
	"context"
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

func (b *localBackend) acquire(ctx context.Context, key Key, value string, ttl time.Duration) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	b.sweep(now)
	if e, ok := b.live(key, now); ok {
		return 0, parseHeld(key, e.value)
	}
	b.keys[key] = localEntry{value: value, expires: now.Add(ttl)}
	b.fences[key.Family]++
	return b.fences[key.Family], nil
}

func (b *localBackend) extend(ctx context.Context, key Key, value string, ttl time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	e, ok := b.live(key, now)
	if !ok || e.value != value {
		return ErrLockLost
	}
	b.keys[key] = localEntry{value: value, expires: now.Add(ttl)}
	return nil
}

func (b *localBackend) release(ctx context.Context, key Key, value, done string, doneTTL time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	e, ok := b.live(key, now)
	if !ok || e.value != value {
		if !ok && doneTTL > 0 {
			// As the Redlock release script: the slot ran, so the marker
			// goes where the key vanished, never over another holder.
			b.keys[key] = localEntry{value: done, expires: now.Add(doneTTL)}
		}
		return ErrLockLost
	}
	if doneTTL > 0 {
		b.keys[key] = localEntry{value: done, expires: now.Add(doneTTL)}
	} else {
		delete(b.keys, key)
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
