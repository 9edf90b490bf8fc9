package redlock

import (
	"context"
	"crypto/tls"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotlock/slotlock/locking/driver"

	"github.com/redis/go-redis/v9"
)

// A Redis node is a driver.Node, as the simulated stores are.
var _ driver.Node = (*redisNode)(nil)

// redisNode is one configured Redis. It starts as a plain client and
// switches, once and for good, to a cluster client when the node answers
// with a MOVED or ASK redirection (a Redis Cluster endpoint).
type redisNode struct {
	addr      string
	opTimeout time.Duration
	batch     batcher
	uopt      *redis.UniversalOptions
	client    atomic.Pointer[clientBox]
	reader    atomic.Pointer[clientBox] // reads of the read model (redisread.go)
	reading   chan struct{}             // one read at a time
	mu        sync.Mutex                // guards the switch and old
	old       []redis.UniversalClient
	cluster   atomic.Bool
}

// clientBox is a client and its pipelines, reused: a pipeline is empty
// again after Exec.
type clientBox struct {
	c     redis.UniversalClient
	pipes sync.Pool
}

// pipeline returns an empty pipeline of b's client, for putPipeline
// once executed.
func (b *clientBox) pipeline() redis.Pipeliner {
	if p, ok := b.pipes.Get().(redis.Pipeliner); ok {
		return p
	}
	return b.c.Pipeline()
}

func newRedisNode(addr, host string, cfg Config) *redisNode {
	uopt := &redis.UniversalOptions{
		Addrs:    []string{addr},
		Username: cfg.Username,
		Password: cfg.Password,
		// One attempt per command: the quorum is the retry. A dead node
		// costs a round one OpTimeout (round), and latency is one round
		// trip.
		MaxRetries:    -1,
		DialTimeout:   cfg.DialTimeout,
		DialerRetries: 1,
		// The ceiling of a socket's deadline: as long as the sender waits
		// for a pipeline that carries a release (releaseWait; a new
		// connection's handshake is read under it too). Each pipeline
		// carries its own deadline, at most this (socketDeadline), and a
		// call through Do its round's deadline as its context's
		// (ContextTimeoutEnabled): on a loaded host a pipeline answered in
		// time is read late, and a socket timeout at the op timeout closed
		// the connection under it, failing every call in it.
		ReadTimeout:           releaseWait * cfg.OpTimeout,
		WriteTimeout:          releaseWait * cfg.OpTimeout,
		ContextTimeoutEnabled: true,
		PoolTimeout:           cfg.OpTimeout,
		DisableIdentity:       true,
		// RESP2: with RESP3 go-redis peeks the socket for push
		// notifications before every command (a quarter of the client's
		// CPU in the benchmarks) and sends HELLO on connect. Redlock needs
		// neither; a node's maintenance blip costs one op timeout on that
		// node, which the quorum absorbs.
		Protocol: 2,
	}
	if cfg.CredentialsProvider != nil {
		uopt.CredentialsProviderContext = cfg.CredentialsProvider
	}
	if cfg.StreamingCredentials != nil {
		uopt.StreamingCredentialsProvider = cfg.StreamingCredentials
	}
	if cfg.TLS || cfg.TLSConfig != nil {
		var tc *tls.Config
		if cfg.TLSConfig != nil {
			tc = cfg.TLSConfig.Clone()
		} else {
			tc = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		if tc.ServerName == "" {
			tc.ServerName = host
		}
		uopt.TLSConfig = tc
	}
	n := &redisNode{addr: addr, opTimeout: cfg.OpTimeout, uopt: uopt, reading: make(chan struct{}, 1)}
	n.batch.opTimeout = cfg.OpTimeout
	n.client.Store(&clientBox{c: redis.NewUniversalClient(uopt)})
	n.reader.Store(&clientBox{c: newReader(uopt)})
	return n
}

func (n *redisNode) Addr() string { return n.addr }

func (n *redisNode) c() redis.UniversalClient { return n.client.Load().c }

// switchToCluster replaces the plain client by a cluster client. The old
// client stays open until Close, as commands may still be using it.
func (n *redisNode) switchToCluster() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cluster.Load() {
		return
	}
	o := *n.uopt
	o.IsClusterMode = true
	// One attempt per command here too: the cluster client's own loop
	// (three more by default) sends a pipeline again after a timeout or a
	// refused dial, with a backoff, and is not bound by a context, so a
	// frozen shard held the node's sender for seconds. A MOVED it gets
	// then (a resharding) fails that call on this node and reloads the
	// slot map for the next.
	o.MaxRedirects = -1
	n.old = append(n.old, n.c(), n.reader.Load().c)
	n.client.Store(&clientBox{c: redis.NewUniversalClient(&o)})
	n.reader.Store(&clientBox{c: newReader(&o)})
	n.cluster.Store(true)
}

// Do runs op as its script (EVALSHA, falling back to EVAL when the node
// lost its script cache) or command, following a cluster redirection once.
// It is sent in the node's next pipeline (redisbatch.go).
func (n *redisNode) Do(ctx context.Context, op driver.Op) (driver.Result, error) {
	if isRead(op) {
		return n.read(ctx, op)
	}
	if n.claim() {
		c := n.call(ctx, time.Time{}, wireCall{op: op})
		n.sendOwn(c)
		return c.wait()
	}
	return n.start(ctx, time.Time{}, wireCall{op: op}).wait()
}

func isRedirect(err error) bool {
	if _, ok := redis.IsMovedError(err); ok {
		return true
	}
	_, ok := redis.IsAskError(err)
	return ok
}

func (n *redisNode) Close() error {
	n.closeBatch()
	n.mu.Lock()
	cls := append(n.old, n.c(), n.reader.Load().c)
	n.old = nil
	n.mu.Unlock()
	var errs []error
	for _, c := range cls {
		if err := c.Close(); err != nil && !errors.Is(err, redis.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
