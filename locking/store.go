package locking

import (
	"context"
	"fmt"

	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/internal/wire"
)

func (l *locker) AdvanceRecord(ctx context.Context, key Key, v int64) error {
	if l.closed.Load() {
		return ErrClosed
	}
	return ctxOr(ctx, l.b.AdvanceRecord(ctx, key, v))
}

func (l *locker) ReadRecord(ctx context.Context, key Key) (int64, error) {
	if l.closed.Load() {
		return 0, ErrClosed
	}
	v, err := l.b.ReadRecord(ctx, key)
	return v, ctxOr(ctx, err)
}

func (l *locker) SetPause(ctx context.Context, family string, p Pause) (Pause, error) {
	if err := driver.CheckKey(Key{Family: family, Name: wire.PauseName + "-check"}); err != nil {
		return Pause{}, err
	}
	if l.closed.Load() {
		return Pause{}, ErrClosed
	}
	got, err := l.b.SetPause(ctx, family, p)
	return got, ctxOr(ctx, err)
}

func (l *locker) ReadPause(ctx context.Context, family string) (Pause, error) {
	if err := driver.CheckKey(Key{Family: family, Name: wire.PauseName + "-check"}); err != nil {
		return Pause{}, err
	}
	if l.closed.Load() {
		return Pause{}, ErrClosed
	}
	got, err := l.b.ReadPause(ctx, family)
	return got, ctxOr(ctx, err)
}

func (l *locker) ReadLog(ctx context.Context, family string, since int64, limit int) ([]LogEntry, error) {
	if err := driver.CheckKey(Key{Family: family, Name: wire.LogName + "-check"}); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return nil, nil
	}
	if l.closed.Load() {
		return nil, ErrClosed
	}
	entries, err := l.b.ReadLog(ctx, family, since, limit)
	return entries, ctxOr(ctx, err)
}

func (l *locker) AppendLog(ctx context.Context, family string, a LogAppend) error {
	if err := driver.CheckKey(Key{Family: family, Name: wire.LogName + "-check"}); err != nil {
		return err
	}
	if a.Keep < 0 {
		return fmt.Errorf("locking: append to the log of %s: keep %d is negative", family, a.Keep)
	}
	if a.Token != 0 {
		if err := driver.CheckRecord(Key{Family: family, Name: a.Fence}, int64(min(a.Token, wire.MaxRecord+1))); err != nil {
			return fmt.Errorf("locking: append to the log of %s: fence: %w", family, err)
		}
	}
	if l.closed.Load() {
		return ErrClosed
	}
	return ctxOr(ctx, l.b.AppendLog(ctx, family, a))
}

func (l *locker) ReadClaims(ctx context.Context, family string) ([]Key, error) {
	if err := driver.CheckKey(Key{Family: family, Name: wire.ClaimsName + "-check"}); err != nil {
		return nil, err
	}
	if l.closed.Load() {
		return nil, ErrClosed
	}
	keys, err := l.b.ReadClaims(ctx, family)
	return keys, ctxOr(ctx, err)
}

func (l *locker) ReadLease(ctx context.Context, key Key) (*HeldError, error) {
	if err := driver.CheckKey(key); err != nil {
		return nil, err
	}
	if l.closed.Load() {
		return nil, ErrClosed
	}
	he, err := l.b.ReadLease(ctx, key)
	return he, ctxOr(ctx, err)
}

func (l *locker) Handled(ctx context.Context, keys []Key) ([]bool, error) {
	for _, k := range keys {
		if err := driver.CheckKey(k); err != nil {
			return nil, err
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	if l.closed.Load() {
		return nil, ErrClosed
	}
	got, err := l.b.Handled(ctx, keys)
	return got, ctxOr(ctx, err)
}
