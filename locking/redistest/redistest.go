// Package redistest starts real redis-server processes for tests, the way
// net/http/httptest starts real HTTP servers.
//
// Each node is its own redis-server process listening on a free loopback
// port (never 6379), without persistence unless asked (--save "" and
// --appendonly no). Nodes are stopped by PID when the test ends; a paused
// (SIGSTOP) node is resumed before it is killed so nothing is left behind.
// Faults are real: Kill (SIGKILL), Pause (SIGSTOP), Resume (SIGCONT),
// Restart (same port, same data directory) and PauseWrites (CLIENT PAUSE
// WRITE: reads answered, writes held). A Proxy (NewProxy) in front of a
// node is the network between it and a client: latency each way, packets
// dropped, connections reset, replies lost.
//
// In a test:
//
//	c := redistest.Start(t, 3)
//	addrs := c.Addrs()
//
// From a TestMain, a benchmark driver or any program, use New and Close:
//
//	c, err := redistest.New(3)
//	if err != nil { ... }
//	defer c.Close()
//
// A Redlock node that is a Redis Cluster endpoint: StartShards(t, nodes,
// shards) starts one Redis Cluster of shards masters per node; Seeds gives
// the address to configure per node, Nodes each cluster's shards.
//
// redis-server must be on PATH (Debian/Ubuntu: apt-get install -y redis-server).
package redistest

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// InstallHint is the command that installs the binary these helpers need.
const InstallHint = "apt-get install -y redis-server"

// ErrNoServer reports that redis-server is not on PATH.
var ErrNoServer = errors.New("redistest: redis-server not found on PATH; install it with: " + InstallHint)

// TB is the part of testing.TB that Start uses; *testing.T and *testing.B
// satisfy it, and so can a small adapter in a non-test program.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Cluster is a set of independent redis-server processes (not a Redis
// Cluster: the nodes do not know each other, as Redlock wants), or, made
// by NewRedisCluster, the shards of one Redis Cluster (shards.go).
type Cluster struct {
	cfg   config
	dir   string
	tlsCA *generatedCA
	nodes []*Node
}

// Start starts k nodes and stops them when the test ends. It calls
// t.Fatalf when redis-server is missing or does not come up.
func Start(t TB, k int, opts ...Option) *Cluster {
	t.Helper()
	c, err := New(k, opts...)
	if err != nil {
		t.Fatalf("%v", err)
		return nil
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// New starts k nodes; the caller must call Close. It returns ErrNoServer
// when redis-server is not on PATH.
func New(k int, opts ...Option) (*Cluster, error) {
	if k < 1 {
		return nil, fmt.Errorf("redistest: need at least 1 node, got %d", k)
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		return nil, ErrNoServer
	}
	c := &Cluster{cfg: config{readyWait: 10 * time.Second}}
	for _, o := range opts {
		o(&c.cfg)
	}
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	c.dir = dir
	if c.cfg.tls {
		ca, err := generateCA(dir)
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		c.tlsCA = ca
	}
	for i := 0; i < k; i++ {
		n := &Node{c: c, idx: i, dir: filepath.Join(dir, "node"+strconv.Itoa(i))}
		if err := os.MkdirAll(n.dir, 0o700); err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("redistest: %w", err)
		}
		c.nodes = append(c.nodes, n)
	}
	// Start the processes in parallel: each waits for its own readiness.
	errs := make([]error, k)
	var wg sync.WaitGroup
	for i, n := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = n.startFreshPort()
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// Close kills every node (resuming paused ones first), waits for the
// processes to exit and removes their data directories. It is idempotent.
func (c *Cluster) Close() error {
	var errs []error
	for _, n := range c.nodes {
		n.mu.Lock()
		n.stopped = true
		n.mu.Unlock()
		if err := n.Kill(); err != nil {
			errs = append(errs, err)
		}
		n.mu.Lock()
		if n.client != nil {
			_ = n.client.Close()
			n.client = nil
		}
		n.mu.Unlock()
	}
	if c.dir != "" {
		if err := os.RemoveAll(c.dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Nodes returns the nodes in start order.
func (c *Cluster) Nodes() []*Node { return c.nodes }

// Node returns node i.
func (c *Cluster) Node(i int) *Node { return c.nodes[i] }

// Addrs returns "127.0.0.1:port" of every node, in start order.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.Addr()
	}
	return out
}

// Username and Password return the credentials the nodes require ("" when
// none; the username is "" when only requirepass is set).
func (c *Cluster) Username() string { return c.cfg.user }
func (c *Cluster) Password() string { return c.cfg.password }

// ClientTLS returns a client TLS config trusting the generated CA, with
// ServerName 127.0.0.1, or nil when the cluster does not use TLS.
func (c *Cluster) ClientTLS() *tls.Config {
	if c.tlsCA == nil {
		return nil
	}
	return &tls.Config{RootCAs: c.tlsCA.pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
}

// CAFile returns the path of the generated CA certificate (PEM), or "".
func (c *Cluster) CAFile() string {
	if c.tlsCA == nil {
		return ""
	}
	return c.tlsCA.caFile
}
