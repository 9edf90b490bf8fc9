package redlock

import (
	"context"
	"sync"
)

// NoEviction is the maxmemory-policy every Redis node must run with: any
// other policy lets Redis delete done markers, tombstones, job leases and
// (allkeys-*) claims, fencing counters and the slot history before their
// time (README, "Locking: Limits").
const NoEviction = "noeviction"

// EvictionPolicy is one Redis node's maxmemory-policy as CheckEviction
// read it.
type EvictionPolicy struct {
	Addr   string
	Policy string // as the node reports it; "" when it could not be read
	// Err says why it could not be read: managed Redis (Azure Cache for
	// Redis, Azure Managed Redis) refuses CONFIG.
	Err error
}

// Safe reports whether the node is known to run with NoEviction.
func (p EvictionPolicy) Safe() bool { return p.Err == nil && p.Policy == NoEviction }

// CheckEviction reads maxmemory-policy (CONFIG GET) on every node of cfg,
// in parallel, in configuration order, over connections of its own that
// it closes before it returns; nil when cfg is not valid (New reports
// why). It changes nothing on the nodes.
func CheckEviction(ctx context.Context, cfg Config) []EvictionPolicy {
	nodes, err := redisNodes(cfg.withDefaults())
	if err != nil {
		return nil
	}
	out := make([]EvictionPolicy, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		out[i].Addr = n.addr
		wg.Go(func() { out[i].Policy, out[i].Err = n.evictionPolicy(ctx) })
	}
	wg.Wait()
	for _, n := range nodes {
		_ = n.Close()
	}
	return out
}

// evictionPolicy reads the node's maxmemory-policy.
func (n *redisNode) evictionPolicy(ctx context.Context) (string, error) {
	m, err := n.c().ConfigGet(ctx, "maxmemory-policy").Result()
	if err != nil {
		return "", err
	}
	return m["maxmemory-policy"], nil
}
