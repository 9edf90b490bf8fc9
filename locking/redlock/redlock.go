package redlock

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/internal/wire"

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
	r := &redlock{
		nodes:     nodes,
		down:      make([]atomic.Bool, len(nodes)),
		prefix:    prefix,
		opTimeout: opTimeout,
		quorum:    len(nodes)/2 + 1,
		log:       opt.Logger,
		clock:     opt.Clock,
		quit:      make(chan struct{}),
	}
	for i, n := range nodes {
		if q, ok := n.(queuingNode); ok {
			q.watchFaults(func(err error) { r.observe(context.Background(), i, err) })
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

// redlock is the driver over N independent nodes.
type redlock struct {
	nodes     []driver.Node
	down      []atomic.Bool // per node: last seen unreachable
	quorum    int
	prefix    string
	opTimeout time.Duration
	log       *slog.Logger
	clock     locking.Clock
	modeStr   string

	tokMu  sync.Mutex
	tokens map[string]uint64 // family -> highest token seen or proposed (a hint)

	// nextRead turns Handled's reads round the nodes (handled.go).
	nextRead atomic.Uint32

	// hookBeforeFence, when set (tests), runs before each fencing-token
	// write-back round.
	hookBeforeFence func(locking.Key)

	// Undos sent again in the background (undoLater): quit stops them
	// at close, which waits for them.
	bg   sync.WaitGroup
	quit chan struct{}
}

// observe logs a node's transitions between reachable and unreachable,
// once each way. Errors caused by the caller's own context, or by this
// replica's own queue (ErrBusy), are not the node's fault and are
// ignored. A queuing node also reports each pipeline's outcome here
// (watchFaults), timed from its write.
func (r *redlock) observe(parent context.Context, i int, err error) {
	if err == nil {
		if r.down[i].Swap(false) {
			r.log.Info("locking: redis node reachable again", "node", r.nodes[i].Addr())
		}
		return
	}
	// ErrBusy is this replica's load: the call was not sent.
	if parent.Err() != nil || isReadError(err) || errors.Is(err, locking.ErrBusy) {
		return
	}
	if !r.down[i].Swap(true) {
		r.log.Warn("locking: redis node unreachable", "node", r.nodes[i].Addr(), "error", err.Error())
	}
}

func (r *redlock) key(k locking.Key) string {
	return r.prefix + ":{" + k.Family + "}:" + k.Name
}

func (r *redlock) fenceKey(family string) string {
	return r.prefix + ":{" + family + "}:" + wire.FenceName
}

// round applies one op per node, in parallel, under one OpTimeout
// deadline, and waits for every answer. op(i) gives node i's op; ok is
// false for a node to leave out. Answers go to res and errs, indexed by
// node; node errors are observed. Nodes that queue their calls (Redis
// nodes: redisbatch.go) get them all queued before the first answer is
// awaited, without a goroutine each, and the first of them found idle is
// sent on the calling goroutine (no hop to its sender); others are called
// on goroutines of their own (the first on the calling goroutine).
func (r *redlock) round(ctx context.Context, op func(i int) (driver.Op, bool), res []driver.Result, errs []error) {
	// The deadline is real time, as the sockets' are. Queued calls carry
	// it and share one pooled timer; a context of its own is made only
	// for nodes called through Do.
	until := time.Now().Add(r.opTimeout)
	var rctx context.Context
	var calls [maxQueuedNodes]*nodeCall
	var wg sync.WaitGroup
	first, firstOp, own, queued := -1, driver.Op(nil), -1, false
	for i := range r.nodes {
		o, ok := op(i)
		if !ok {
			continue
		}
		if q, isQ := r.nodes[i].(queuingNode); isQ && i < maxQueuedNodes && !isRead(o) {
			queued = true
			if own < 0 && q.claim() {
				own, calls[i] = i, q.call(ctx, until, o)
				continue
			}
			calls[i] = q.start(ctx, until, o)
			continue
		}
		if rctx == nil {
			var cancel context.CancelFunc
			rctx, cancel = context.WithDeadline(ctx, until)
			defer cancel()
		}
		if first < 0 {
			first, firstOp = i, o
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i], errs[i] = r.nodes[i].Do(rctx, o)
			r.observe(ctx, i, errs[i])
		}()
	}
	if own >= 0 {
		r.nodes[own].(queuingNode).sendOwn(calls[own])
	}
	if first >= 0 {
		res[first], errs[first] = r.nodes[first].Do(rctx, firstOp)
		r.observe(ctx, first, errs[first])
	}
	if queued {
		r.awaitQueued(ctx, until, calls[:min(len(r.nodes), maxQueuedNodes)], res, errs)
	}
	wg.Wait()
}

// awaitQueued waits for the queued calls' answers, until the round's
// deadline, and observes what they say of their nodes.
func (r *redlock) awaitQueued(ctx context.Context, until time.Time, calls []*nodeCall, res []driver.Result, errs []error) {
	timer := getTimer(time.Until(until))
	defer putTimer(timer)
	expire := timer.C
	for i, c := range calls {
		if c == nil {
			continue
		}
		res[i], errs[i] = c.wait(expire)
		if !time.Now().Before(until) {
			expire = expired // the timer's tick may have been taken
		}
		if !queueHeld(errs[i]) {
			r.observe(ctx, i, errs[i])
		}
	}
}

// timers are the rounds' deadline timers, reused (a stopped timer
// delivers no stale tick since Go 1.23).
var timers sync.Pool

func getTimer(d time.Duration) *time.Timer {
	if t, ok := timers.Get().(*time.Timer); ok {
		t.Reset(d)
		return t
	}
	return time.NewTimer(d)
}

func putTimer(t *time.Timer) {
	t.Stop()
	timers.Put(t)
}

// expired is a channel that is always ready: a deadline already passed.
var expired = func() <-chan time.Time {
	c := make(chan time.Time)
	close(c)
	return c
}()

// queuingNode is a Node that queues a call and answers it later
// (redisNode), so that a round needs no goroutine per node. claim makes
// the caller the node's sender when it is idle: the caller then sends its
// own call (sendOwn) instead of queuing it (start).
type queuingNode interface {
	start(ctx context.Context, until time.Time, op driver.Op) *nodeCall
	claim() bool
	call(ctx context.Context, until time.Time, op driver.Op) *nodeCall
	sendOwn(c *nodeCall)
	watchFaults(f func(error))
}

// maxQueuedNodes bounds the nodes whose calls a round queues at once (a
// fixed array, kept on the stack); further nodes are called on goroutines.
const maxQueuedNodes = 16

// all is a round's op selector for the same op on every node.
func all(o driver.Op) func(int) (driver.Op, bool) {
	return func(int) (driver.Op, bool) { return o, true }
}

// nodeErrs turns per-node errors into one errors.Join of *NodeError.
func (r *redlock) nodeErrs(errs []error) error {
	var out []error
	for i, err := range errs {
		if err != nil {
			out = append(out, &locking.NodeError{Addr: r.nodes[i].Addr(), Err: err})
		}
	}
	return errors.Join(out...)
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
