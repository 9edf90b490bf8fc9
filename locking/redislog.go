package locking

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// go-redis writes its own messages (failed dials, pool events) through a
// process-wide logger, by default as plain text on stderr. routeRedisLog
// sends them to the most recently built Redlock's logger at debug level, so
// they share its format and stay quiet at info; the lock layer itself logs
// node state changes once, at warn and info.
var redisLog atomic.Pointer[slog.Logger]

var routeOnce sync.Once

func routeRedisLog(l *slog.Logger) {
	redisLog.Store(l)
	routeOnce.Do(func() { redis.SetLogger(redisLogger{}) })
}

type redisLogger struct{}

func (redisLogger) Printf(ctx context.Context, format string, v ...any) {
	if l := redisLog.Load(); l != nil && l.Enabled(ctx, slog.LevelDebug) {
		l.DebugContext(ctx, "go-redis: "+fmt.Sprintf(format, v...))
	}
}
