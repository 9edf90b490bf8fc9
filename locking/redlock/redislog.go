package redlock

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// go-redis writes its own messages (failed dials, pool events) through a
// process-wide logger, by default as plain text on stderr. RouteRedisLog
// sends them to l at debug level, so that they share the program's format
// and stay quiet at info (the lock layer itself logs node state changes
// once, at warn and info). It changes process-wide state, so the program
// calls it once, at start; a library using this package leaves it alone.
func RouteRedisLog(l *slog.Logger) {
	redisLog.Store(l)
	routeOnce.Do(func() { redis.SetLogger(redisLogger{}) })
}

var (
	redisLog  atomic.Pointer[slog.Logger]
	routeOnce sync.Once
)

type redisLogger struct{}

func (redisLogger) Printf(ctx context.Context, format string, v ...any) {
	if l := redisLog.Load(); l != nil && l.Enabled(ctx, slog.LevelDebug) {
		l.DebugContext(ctx, "go-redis: "+fmt.Sprintf(format, v...))
	}
}
