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
