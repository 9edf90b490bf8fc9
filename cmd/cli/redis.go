package cli

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/slotlock/slotlock/internal/config"
	"github.com/slotlock/slotlock/locking/entraauth"
	"github.com/slotlock/slotlock/locking/redlock"
)

// redisConfig turns the redis section into the lock layer's settings. With
// redis.auth: entra it fetches the first Microsoft Entra ID token from the
// managed identity now, so a replica without an identity fails at start
// with a clear error; the returned func stops the token refresher.
func redisConfig(ctx context.Context, cfg *config.Config, log *slog.Logger) (redlock.Config, func(), error) {
	rc := cfg.LockingConfig()
	if cfg.Redis.Auth != config.AuthEntra {
		return rc, nil, nil
	}
	p, err := entraauth.NewManagedIdentity(ctx, cfg.Redis.EntraClientID, entraauth.Options{Logger: log})
	if err != nil {
		// Not a configuration error: the identity or its endpoint failed.
		return rc, nil, &startupError{fmt.Errorf("redis.auth entra: %w", err)}
	}
	// Streaming: every pooled connection re-authenticates when a new token
	// arrives, not only connections opened after it.
	rc.StreamingCredentials = p
	return rc, func() { _ = p.Close() }, nil
}

// evNodeCount is the event of a start-up line about a node count that
// tolerates fewer faults than it seems (nodeCountWarning).
const evNodeCount = "lock.node_count"

// nodeCountWarning is what a replica says at start of a node count that
// buys less than it seems ("" for 3, 5, 7...): a lock needs a majority of
// all the nodes, so one or two nodes tolerate none down, and an even count
// tolerates no more than the odd count below it. A first try with one
// local Redis is fine; a production fleet on one or two nodes stops at
// the first node restart, and nobody had told it.
func nodeCountWarning(n int) string {
	switch {
	case n == 1:
		return "one Redis node: every lock needs it, so while it is down or restarting no slot runs, and should it " +
			"come back without its data (no append-only file) a slot going on can run again; three independent " +
			"nodes tolerate one down"
	case n == 2:
		return "two Redis nodes: a lock needs a majority of them, both, so while either is down no slot runs; a " +
			"third independent node tolerates one down"
	case n > 2 && n%2 == 0:
		return fmt.Sprintf("%d Redis nodes tolerate %d down, as %d do: a lock needs %d of them; an odd count "+
			"gets the same safety for a node less", n, (n-1)/2, n-1, n/2+1)
	}
	return ""
}
