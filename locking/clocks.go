package locking

import (
	"context"

	"github.com/slotlock/slotlock/locking/driver"
)

// ClockReader is implemented by the Lockers NewLocker makes: ReadClocks
// reads the clock of every node of the lock stores, for a replica to
// find out whether its own clock is off (the scheduler's clock check).
// It is not part of Locker, so a Locker that wraps another keeps
// compiling; pass it on to offer the check.
type ClockReader interface {
	// ReadClocks reads every node's clock once, one entry per node in
	// configuration order, each against the Locker's Clock (Options.Clock).
	// It returns none when the stores keep no time of their own (the
	// in-process store shares this process's clock), and ErrClosed once
	// the Locker is closed.
	ReadClocks(ctx context.Context) ([]NodeClock, error)
}

func (l *locker) ReadClocks(ctx context.Context) ([]NodeClock, error) {
	if l.closed.Load() {
		return nil, ErrClosed
	}
	cr, ok := l.b.(driver.ClockReader)
	if !ok {
		return nil, nil
	}
	return cr.ReadClocks(ctx), ctx.Err()
}
