package locking

import (
	"context"
	"strings"

	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/internal/wire"
)

// The in-process store's reads: records, pauses, a family's log, its open
// claims, a lease's holder and done markers. Each answers under b.mu, as
// one Redis node answers a read between two writes.

func (b *localDriver) ReadRecord(ctx context.Context, key Key) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.records[key], nil
}

func (b *localDriver) ReadPause(ctx context.Context, family string) (Pause, error) {
	if err := ctx.Err(); err != nil {
		return Pause{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pauses[family], nil
}

func (b *localDriver) ReadLog(ctx context.Context, family string, since int64, limit int) ([]LogEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []LogEntry
	for _, e := range b.logs[family] {
		if e.Score >= since && len(out) < limit {
			out = append(out, e)
		}
	}
	return out, nil
}

func (b *localDriver) ReadClaims(ctx context.Context, family string) ([]Key, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var names []string
	for f := range b.claims[family] {
		names = append(names, f)
	}
	return driver.ClaimKeys(family, names), nil
}

func (b *localDriver) ReadLease(ctx context.Context, key Key) (*HeldError, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.live(key, now)
	if !ok {
		return nil, nil
	}
	return driver.ParseHeld(key, e.value), nil
}

func (b *localDriver) Handled(ctx context.Context, keys []Key) ([]bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := b.clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]bool, len(keys))
	for i, k := range keys {
		e, ok := b.live(k, now)
		out[i] = ok && strings.HasPrefix(e.value, wire.DonePrefix)
	}
	return out, nil
}
