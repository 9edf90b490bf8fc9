package locking

import (
	"context"

	"github.com/slotlock/slotlock/locking/driver"
)

// IdentityReader is implemented by the Lockers NewLocker makes:
// ReadIdentities asks every node of the lock stores which server it is
// and whose data it holds, for a replica to find nodes that are not
// independent of each other (the scheduler's node check). Like
// ClockReader it is not part of Locker; pass it on to offer the check.
type IdentityReader interface {
	// ReadIdentities reads every node's identity once, one entry per node
	// in configuration order. It returns none when the stores cannot say
	// (the in-process store, simulated nodes), and ErrClosed once the
	// Locker is closed.
	ReadIdentities(ctx context.Context) ([]NodeIdentity, error)
}

func (l *locker) ReadIdentities(ctx context.Context) ([]NodeIdentity, error) {
	if l.closed.Load() {
		return nil, ErrClosed
	}
	ir, ok := l.b.(driver.IdentityReader)
	if !ok {
		return nil, nil
	}
	return ir.ReadIdentities(ctx), ctx.Err()
}
