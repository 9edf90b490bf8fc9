package cli

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/slotlock/slotlock/locking/redlock"
)

// evictionCheckTimeout bounds the start-up check of the nodes' eviction
// policy.
const evictionCheckTimeout = 10 * time.Second

// warnEviction checks, once at start and in the background, that every
// Redis node runs with maxmemory-policy noeviction, and warns — never
// fails — about each that does not and, once, about those where the
// policy cannot be read (managed Redis refuses CONFIG).
func warnEviction(ctx context.Context, rc redlock.Config, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, evictionCheckTimeout)
	defer cancel()
	var unread []string
	var firstErr error
	for _, p := range redlock.CheckEviction(ctx, rc) {
		switch {
		case p.Err != nil:
			unread = append(unread, p.Addr)
			if firstErr == nil {
				firstErr = p.Err
			}
		case !p.Safe():
			log.Warn("a Redis node may evict slotlock's keys: set maxmemory-policy noeviction; an evicted done marker, claim or fencing counter can run a slot twice or repeat a token (README, Locking: Limits)",
				"node", p.Addr, "maxmemory_policy", p.Policy)
		}
	}
	if len(unread) > 0 && ctx.Err() == nil {
		log.Warn("could not read maxmemory-policy on some Redis nodes (managed Redis refuses CONFIG, or the node did not answer): make sure each runs with noeviction (README, Locking: Limits)",
			"nodes", strings.Join(unread, ","), "error", firstErr.Error())
	}
}
