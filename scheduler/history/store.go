package history

import (
	"context"

	"github.com/slotlock/slotlock/locking"
)

// Store is what the read model needs of the lock stores: their logs, a
// job's pause register and its open claims. A locking.Locker (what
// redlock.New and locking.NewLocal return, scheduler.Config.Locker) is one;
// a bare locking.Locker is not.
type Store interface {
	// ReadLog returns family's log entries scored since or later, newest
	// first, at most limit: what a majority of the stores holds.
	ReadLog(ctx context.Context, family string, since int64, limit int) ([]locking.LogEntry, error)
	// AppendLog adds an entry to family's log (RecordControl).
	AppendLog(ctx context.Context, family string, a locking.LogAppend) error
	// ReadPause returns family's pause register.
	ReadPause(ctx context.Context, family string) (locking.Pause, error)
	// ReadClaims returns the keys of family's open claims.
	ReadClaims(ctx context.Context, family string) ([]locking.Key, error)
}
