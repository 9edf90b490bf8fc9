package redlock

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"

	"github.com/redis/go-redis/v9/auth"
)

// Config is how New reaches its nodes. Each entry of Nodes is
// an independent Redis: a standalone server or a Redis Cluster endpoint
// (the client follows MOVED/ASK redirections by switching that node to a
// cluster client). The nodes must not replicate to each other.
type Config struct {
	// Nodes are "host:port" addresses, one per independent Redis.
	Nodes []string
	// Username and Password authenticate every node (ACL user, or the
	// requirepass password with an empty Username).
	Username, Password string
	// TLS turns TLS on with the system roots and, as server name, the host
	// part of each node's address.
	TLS bool
	// TLSConfig, when set, is used (cloned) instead of the default TLS
	// settings; its ServerName is filled per node when empty. It implies TLS.
	TLSConfig *tls.Config
	// KeyPrefix starts every key: <prefix>:{<family>}:<name>. Default "slotlock".
	KeyPrefix string
	// DialTimeout bounds opening a connection (default 250ms); OpTimeout
	// bounds each command on each node, the dial included (default 100ms).
	// Keep OpTimeout far below the lock TTL: a dead node then costs at most
	// one OpTimeout per round, never a TTL.
	DialTimeout, OpTimeout time.Duration
	// CredentialsProvider, when set, is asked for the username and password
	// each time a connection is opened (for short-lived tokens such as
	// Microsoft Entra ID); it takes precedence over Username/Password.
	CredentialsProvider func(ctx context.Context) (username, password string, err error)
	// StreamingCredentials, when set, supplies credentials that change while
	// connections stay open (Microsoft Entra ID tokens: locking/entraauth).
	// Every pooled connection subscribes and re-authenticates (AUTH) when new
	// credentials are published; new connections use the current ones. It
	// takes precedence over CredentialsProvider, Username and Password.
	StreamingCredentials auth.StreamingCredentialsProvider
}

// Defaults for Config's zero fields.
const (
	DefaultKeyPrefix   = "slotlock"
	DefaultDialTimeout = 250 * time.Millisecond
	DefaultOpTimeout   = 100 * time.Millisecond
)

func (c Config) withDefaults() Config {
	if c.KeyPrefix == "" {
		c.KeyPrefix = DefaultKeyPrefix
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.OpTimeout <= 0 {
		c.OpTimeout = DefaultOpTimeout
	}
	return c
}

// New returns a Locker over cfg.Nodes. It does not connect: nodes
// that are unreachable now (a replica starting during an outage) are tried
// again on every operation, so New fails only on a configuration
// error. Operations need a majority (len(Nodes)/2+1) of the nodes.
func New(cfg Config, opt locking.Options) (locking.Locker, error) {
	l, _, err := newWithDriver(cfg, opt)
	return l, err
}

// newWithDriver is New, and the Redlock driver under the Locker.
func newWithDriver(cfg Config, opt locking.Options) (locking.Locker, *redlock, error) {
	cfg, opt = cfg.withDefaults(), opt.WithDefaults()
	nodes, err := RedisNodes(cfg)
	if err != nil {
		return nil, nil, err
	}
	r, err := onNodes(nodes, cfg.KeyPrefix, cfg.OpTimeout, opt)
	if err != nil {
		for _, n := range nodes {
			_ = n.Close()
		}
		return nil, nil, err
	}
	return locking.NewLocker(r, opt), r, nil
}

// RedisNodes returns the Nodes that New runs on, one per entry
// of cfg.Nodes, for OnNodes (which a test may give wrapped
// nodes, to order or lose their requests). Close each when done.
func RedisNodes(cfg Config) ([]driver.Node, error) {
	nodes, err := redisNodes(cfg.withDefaults())
	if err != nil {
		return nil, err
	}
	ns := make([]driver.Node, len(nodes))
	for i, n := range nodes {
		ns[i] = n
	}
	return ns, nil
}

// redisNodes is RedisNodes for cfg with its defaults, as the nodes' own
// type (CheckEviction asks them more than a Node does).
func redisNodes(cfg Config) ([]*redisNode, error) {
	if len(cfg.Nodes) == 0 {
		return nil, errors.New("locking: redlock: no nodes configured")
	}
	var nodes []*redisNode
	seen := map[string]bool{}
	for _, addr := range cfg.Nodes {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("locking: redlock: node %q: %w", addr, err)
		}
		if seen[addr] {
			return nil, fmt.Errorf("locking: redlock: node %q listed twice", addr)
		}
		seen[addr] = true
		nodes = append(nodes, newRedisNode(addr, host, cfg))
	}
	return nodes, nil
}

// OnNodes returns a Locker running the Redlock algorithm over
// nodes, with keys under prefix and opTimeout per node and round (defaults
// as in Config). New uses it with Redis nodes; the simulation
// (locking/locksim) with simulated ones.
func OnNodes(nodes []driver.Node, prefix string, opTimeout time.Duration, opt locking.Options) (locking.Locker, error) {
	opt = opt.WithDefaults()
	r, err := onNodes(nodes, prefix, opTimeout, opt)
	if err != nil {
		return nil, err
	}
	return locking.NewLocker(r, opt), nil
}

// onNodes is the driver OnNodes runs the front end over; opt has its
// defaults.
func onNodes(nodes []driver.Node, prefix string, opTimeout time.Duration, opt locking.Options) (*redlock, error) {
	if prefix == "" {
		prefix = DefaultKeyPrefix
	}
	if opTimeout <= 0 {
		opTimeout = DefaultOpTimeout
	}
	if len(nodes) == 0 {
		return nil, errors.New("locking: redlock: no nodes configured")
	}
	if strings.ContainsAny(prefix, "{}") {
		// A brace in the prefix would become the hash tag of every key,
		// putting all families in one cluster slot.
		return nil, fmt.Errorf("locking: redlock: key prefix %q must not contain { or }", prefix)
	}
	ns := &nodeSet{
		nodes:     nodes,
		down:      make([]atomic.Bool, len(nodes)),
		downAt:    make([]atomic.Int64, len(nodes)),
		prefix:    prefix,
		families:  newFamilyCache(),
		opTimeout: opTimeout,
		quorum:    len(nodes)/2 + 1,
		log:       opt.Logger,
		clock:     opt.Clock,
		quit:      make(chan struct{}),
	}
	r := &redlock{nodeSet: ns, store: &store{nodeSet: ns}}
	for i, n := range nodes {
		if q, ok := n.(queuingNode); ok {
			q.watchFaults(func(err error) { r.observeFailure(context.Background(), i, err) })
		}
	}
	r.modeStr = fmt.Sprintf("redlock(%d nodes)", len(nodes))
	if len(nodes) == 1 {
		r.modeStr = "redlock(1 node)"
	}
	return r, nil
}

// The Redlock quorum is a driver under locking.NewLocker.
var _ driver.Driver = (*redlock)(nil)

// redlock is the driver over N independent nodes: the steps of a lease
// (acquire.go, fence.go, lease.go, undo.go) over the nodes' rounds, with
// the fleet's state (the Store's reads and writes) on the same nodes.
type redlock struct {
	*nodeSet
	*store
	modeStr string

	tokMu  sync.Mutex
	tokens map[string]uint64 // family -> highest token seen or proposed (a hint)

	// hookBeforeFence, when set (tests), runs before each fencing-token
	// write-back round.
	hookBeforeFence func(locking.Key)
}

func (r *redlock) Mode() string { return r.modeStr }

func (r *redlock) Size() (nodes, quorum int) { return len(r.nodes), r.quorum }

func (r *redlock) Close() error {
	close(r.quit)
	r.bg.Wait()
	var errs []error
	for _, n := range r.nodes {
		if err := n.Close(); err != nil {
			errs = append(errs, &locking.NodeError{Addr: n.Addr(), Err: err})
		}
	}
	return errors.Join(errs...)
}
