package redistest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/slotlock/slotlock/locking/internal/wire"
)

// Redis Cluster endpoints: a Redlock node may be a Redis Cluster, and a
// test of scale-out or of a shard failing needs real ones. A Cluster
// started by NewRedisCluster is one such endpoint, its Nodes its shards
// (masters without replicas, so a killed shard stays failed); Shards is
// several of them, one per Redlock node.

// hashSlots is the number of Redis Cluster hash slots.
const hashSlots = wire.HashSlots

// StartShards starts nodes Redis Clusters of shards masters each and
// stops them when the test ends: one Redlock node per cluster, reached
// through Shards.Seeds.
func StartShards(t TB, nodes, shards int, opts ...Option) *Shards {
	t.Helper()
	s, err := NewShards(nodes, shards, opts...)
	if err != nil {
		t.Fatalf("%v", err)
		return nil
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Shards is a set of Redis Clusters, each one Redlock node.
type Shards struct {
	nodes []*Cluster
}

// NewShards is StartShards for callers without a testing.TB; the caller
// must call Close. The clusters start and form in parallel.
func NewShards(nodes, shards int, opts ...Option) (*Shards, error) {
	if nodes < 1 {
		return nil, fmt.Errorf("redistest: need at least 1 node, got %d", nodes)
	}
	s := &Shards{nodes: make([]*Cluster, nodes)}
	errs := make([]error, nodes)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.nodes[i], errs[i] = NewRedisCluster(shards, opts...)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// Seeds returns, per Redlock node, the address of its first shard: the
// address a client is configured with, which finds the other shards.
func (s *Shards) Seeds() []string {
	out := make([]string, len(s.nodes))
	for i, c := range s.nodes {
		out[i] = c.Node(0).Addr()
	}
	return out
}

// Nodes returns the Redlock nodes, each a Redis Cluster whose Nodes are
// its shards.
func (s *Shards) Nodes() []*Cluster { return s.nodes }

// Node returns Redlock node i.
func (s *Shards) Node(i int) *Cluster { return s.nodes[i] }

// Close stops every shard of every node. It is idempotent.
func (s *Shards) Close() error {
	var errs []error
	for _, c := range s.nodes {
		if c != nil {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// NewRedisCluster starts shards redis-server processes in cluster mode
// and forms one Redis Cluster of them: shard i serves the i-th equal
// range of hash slots (ShardOf), shard 0 meets the others, and it returns
// once every shard reports cluster_state:ok. The caller must call Close.
func NewRedisCluster(shards int, opts ...Option) (*Cluster, error) {
	c, err := New(shards, append(opts, func(c *config) { c.clusterMode = true })...)
	if err != nil {
		return nil, err
	}
	if err := c.form(); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// formWait bounds how long form waits for the cluster to be ok. It is
// longer than a server's readyWait: with the other packages' tests
// loading the host (the race detector, two cores) a cluster's gossip
// took over 10 s to report ok on every shard (a CI run, 2026-12-04).
const formWait = 30 * time.Second

// form assigns the slot ranges, introduces the shards and waits for the
// cluster to be ok on every one of them.
func (c *Cluster) form() error {
	wait := max(c.cfg.readyWait, formWait)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	k := len(c.nodes)
	for i, n := range c.nodes {
		lo, hi := i*hashSlots/k, (i+1)*hashSlots/k-1
		if err := n.Client().Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
			return fmt.Errorf("redistest: shard %d: CLUSTER ADDSLOTSRANGE %d %d: %w", i, lo, hi, err)
		}
	}
	for i, n := range c.nodes[1:] {
		// The bus port is named: MEET would assume port+10000.
		if err := c.nodes[0].Client().Do(ctx, "CLUSTER", "MEET", "127.0.0.1", n.Port(), n.busPort).Err(); err != nil {
			return fmt.Errorf("redistest: shard 0: CLUSTER MEET shard %d: %w", i+1, err)
		}
	}
	for i, n := range c.nodes {
		seen := "" // the last CLUSTER INFO answered: what the failure shows
		for {
			info, err := n.Client().ClusterInfo(ctx).Result()
			if err == nil && strings.Contains(info, "cluster_state:ok") {
				break
			}
			if err == nil {
				seen = info
			}
			if ctx.Err() != nil {
				return fmt.Errorf("redistest: shard %d: cluster not ok after %v: %v\n%s", i, wait, err, seen)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return nil
}

// ShardOf returns the index of the shard of a cluster of shards (as
// NewRedisCluster assigns them) that serves key, by its hash tag.
func ShardOf(key string, shards int) int {
	slot := KeySlot(key)
	i := shards - 1
	for i > 0 && slot < i*hashSlots/shards {
		i--
	}
	return i
}

// KeySlot is Redis Cluster's hash slot of key: CRC16 of its hash tag
// (the text inside the first {...}, when not empty) or of the whole key.
func KeySlot(key string) int { return wire.TagSlot(wire.HashTag(key)) }
