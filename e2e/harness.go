//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking/redistest"
)

// Cluster is one scenario's world: Redis nodes, an optional proxy, the
// replicas, the ledger, and what the scenario declared about its faults.
// Everything it starts is stopped by PID when the test ends, also when it
// fails; the scenario's directory is kept (and its path logged) on failure.
type Cluster struct {
	t      testing.TB
	bin    Binaries
	spec   Spec
	dir    string
	config string
	ledger string
	Redis  *redistest.Cluster // nil when Spec.Shards or ClusterMode asks for cluster endpoints
	Shards *redistest.Shards  // the cluster endpoints, or nil
	Proxy  *redistest.Proxy   // nil unless Spec.ProxyNode >= 0
	Links  *Links             // nil unless Spec.Links
	Faults *FaultRecord       // the kills, freezes and fault windows the checker is told of

	born     time.Time // when NewCluster began: host pauses since count
	mu       sync.Mutex
	replicas map[string]*Replica
	order    []string // replica names in first-start order
	exitErrs []string
}

// NewCluster starts the Redis nodes (and proxy) and writes the config.
func NewCluster(t testing.TB, bin Binaries, spec Spec) *Cluster {
	t.Helper()
	born := time.Now()
	if spec.Nodes == 0 && !spec.Local {
		spec.Nodes = 3
	}
	if spec.TTL == 0 {
		spec.TTL = 3 * time.Second
	}
	if spec.Skew == 0 {
		spec.Skew = time.Second
	}
	if spec.Grace == 0 {
		spec.Grace = 5 * time.Second
	}
	if spec.OpTimeout == 0 {
		spec.OpTimeout = 100 * time.Millisecond
	}
	name := strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
	dir, err := os.MkdirTemp("", "slotlock-e2e-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{t: t, bin: bin, spec: spec, dir: dir, born: born,
		config: filepath.Join(dir, "config.yaml"), ledger: filepath.Join(dir, "ledger.jsonl"),
		replicas: map[string]*Replica{}, Faults: &FaultRecord{lateness: spec.lateness()}}
	t.Cleanup(func() {
		c.killAll()
		if t.Failed() || os.Getenv("SLOTLOCK_E2E_KEEP") != "" {
			t.Logf("scenario files kept in %s (ledger.jsonl, <replica>.log, config.yaml)", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	var addrs []string
	if spec.Local {
		if spec.ProxyNode >= 0 || spec.Links || spec.Nodes > 0 {
			t.Fatal("e2e: Spec.Local starts no Redis: no nodes, proxy or links")
		}
	} else {
		addrs = c.startRedis()
	}
	if spec.ProxyNode >= 0 && spec.ProxyNode < len(addrs) {
		px, err := redistest.NewProxy(addrs[spec.ProxyNode])
		if err != nil {
			t.Fatal(err)
		}
		c.Proxy = px
		t.Cleanup(func() { _ = px.Close() })
		addrs[spec.ProxyNode] = px.Addr()
	}
	if spec.Links && c.Shards != nil {
		t.Fatal("e2e: links in front of cluster endpoints are not supported (Spec.Links)")
	}
	if spec.Links {
		c.Links = &Links{t: t, addrs: addrs, by: map[string][]*redistest.Proxy{}}
	}
	if err := os.WriteFile(c.config, c.configJSON(addrs), 0o644); err != nil {
		t.Fatal(err)
	}
	return c
}

// startRedis starts the Redis nodes (standalone, or each a Redis Cluster
// of Spec.Shards masters) and returns the address per node the replicas
// are given: with clusters, one seed each.
func (c *Cluster) startRedis() []string {
	t, spec := c.t, c.spec
	var opts []redistest.Option
	if spec.AppendOnly {
		opts = append(opts, redistest.AppendOnly())
	}
	if spec.SteppableClocks {
		opts = append(opts, redistest.SteppableClocks())
	}
	if spec.Shards > 1 || spec.ClusterMode {
		if spec.ProxyNode >= 0 {
			t.Fatal("e2e: a proxy in front of a cluster endpoint is not supported (Spec.ProxyNode)")
		}
		rs, err := redistest.NewShards(spec.Nodes, max(spec.Shards, 1), opts...)
		if err != nil {
			t.Fatal(err)
		}
		c.Shards = rs
		t.Cleanup(func() { _ = rs.Close() })
		return rs.Seeds()
	}
	rc, err := redistest.New(spec.Nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	c.Redis = rc
	t.Cleanup(func() { _ = rc.Close() })
	return rc.Addrs()
}

// redisShards returns, per Redis node, its processes: the node itself, or
// the shards of its cluster.
func (c *Cluster) redisShards() [][]*redistest.Node {
	var out [][]*redistest.Node
	if c.Shards != nil {
		for _, rc := range c.Shards.Nodes() {
			out = append(out, rc.Nodes())
		}
		return out
	}
	if c.Redis == nil {
		return nil // Spec.Local
	}
	for _, n := range c.Redis.Nodes() {
		out = append(out, []*redistest.Node{n})
	}
	return out
}

// Dir is the scenario's directory (config, ledger, logs).
func (c *Cluster) Dir() string { return c.dir }

// SleepUntil sleeps until t.
func SleepUntil(t time.Time) { time.Sleep(time.Until(t)) }

// NextSecond is the first whole second strictly after t.
func NextSecond(t time.Time) time.Time { return t.Truncate(time.Second).Add(time.Second) }
