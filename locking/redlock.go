package locking

import (
	"context"
	"crypto/tls"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/auth"
)

// RedisConfig is how NewRedlock reaches its nodes. Each entry of Nodes is
// an independent Redis: a standalone server or a Redis Cluster endpoint
// (the client follows MOVED/ASK redirections by switching that node to a
// cluster client). The nodes must not replicate to each other.
type RedisConfig struct {
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

// Defaults for RedisConfig's zero fields.
const (
	DefaultKeyPrefix   = "slotlock"
	DefaultDialTimeout = 250 * time.Millisecond
	DefaultOpTimeout   = 100 * time.Millisecond
)

func (c RedisConfig) withDefaults() RedisConfig {
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

// ErrSplitVote reports an Acquire in which the nodes that answered were
// split between several would-be holders so that none, this one included,
// reached a majority: typically several replicas firing in the same
// millisecond. Nobody holds the key, and the attempt has been undone, so
// trying again after a short random delay is likely to succeed. The error
// is also a *HeldError (errors.As) naming the most frequent other holder,
// and matches ErrNotAcquired.
var ErrSplitVote = errors.New("locking: split vote")

// SplitVoteError is the error of a split vote: errors.Is(err, ErrSplitVote)
// and errors.Is(err, ErrNotAcquired) hold, and errors.As finds the
// *HeldError inside.
type SplitVoteError struct {
	Held *HeldError
}

func (e *SplitVoteError) Error() string {
	s := "locking: " + e.Held.Key.String() + " not acquired: split vote, no majority"
	if e.Held.Holder != "" {
		s += " (also tried by " + e.Held.Holder + ")"
	}
	return s
}
func (e *SplitVoteError) Is(target error) bool { return target == ErrSplitVote }
func (e *SplitVoteError) Unwrap() error        { return e.Held }

// maxRecord bounds record and token values: the Lua scripts compare
// numbers as doubles, which are exact up to 2^53.
const maxRecord = 1 << 53

var (
	//go:embed redlock_acquire.lua
	acquireLua    string
	acquireScript = redis.NewScript(acquireLua)
	//go:embed redlock_maxset.lua
	maxsetLua    string
	maxsetScript = redis.NewScript(maxsetLua)
	//go:embed redlock_extend.lua
	extendLua    string
	extendScript = redis.NewScript(extendLua)
	//go:embed redlock_release.lua
	releaseLua    string
	releaseScript = redis.NewScript(releaseLua)
)

// NewRedlock returns a Locker over cfg.Nodes. It does not connect: nodes
// that are unreachable now (a replica starting during an outage) are tried
// again on every operation, so NewRedlock fails only on a configuration
// error. Operations need a majority (len(Nodes)/2+1) of the nodes.
func NewRedlock(cfg RedisConfig, opt Options) (Locker, error) {
	cfg = cfg.withDefaults()
	opt = opt.withDefaults()
	if len(cfg.Nodes) == 0 {
		return nil, errors.New("locking: redlock: no nodes configured")
	}
	if strings.ContainsAny(cfg.KeyPrefix, "{}") {
		// A brace in the prefix would become the hash tag of every key,
		// putting all families in one cluster slot.
		return nil, fmt.Errorf("locking: redlock: key prefix %q must not contain { or }", cfg.KeyPrefix)
	}
	r := &redlock{
		prefix:    cfg.KeyPrefix,
		opTimeout: cfg.OpTimeout,
		quorum:    len(cfg.Nodes)/2 + 1,
		log:       opt.Logger,
	}
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
		r.nodes = append(r.nodes, newRedisNode(addr, host, cfg))
	}
	routeRedisLog(opt.Logger)
	r.modeStr = fmt.Sprintf("redlock(%d nodes)", len(r.nodes))
	if len(r.nodes) == 1 {
		r.modeStr = "redlock(1 node)"
	}
	return newLocker(r, opt), nil
}

// redlock is the backend over N independent nodes.
type redlock struct {
	nodes     []*redisNode
	quorum    int
	prefix    string
	opTimeout time.Duration
	log       *slog.Logger
	modeStr   string

	tokMu  sync.Mutex
	tokens map[string]uint64 // family -> highest token seen (a hint)
}

// redisNode is one configured node. It starts as a plain client and
// switches, once and for good, to a cluster client when the node answers
// with a MOVED or ASK redirection (a Redis Cluster endpoint).
type redisNode struct {
	addr    string
	uopt    *redis.UniversalOptions
	client  atomic.Pointer[clientBox]
	mu      sync.Mutex // guards the switch and old
	old     []redis.UniversalClient
	down    atomic.Bool
	cluster atomic.Bool
}

type clientBox struct{ c redis.UniversalClient }

func newRedisNode(addr, host string, cfg RedisConfig) *redisNode {
	uopt := &redis.UniversalOptions{
		Addrs:    []string{addr},
		Username: cfg.Username,
		Password: cfg.Password,
		// One attempt per command: the quorum is the retry. A dead node
		// costs one OpTimeout, and latency is one round trip.
		MaxRetries:    -1,
		DialTimeout:   cfg.DialTimeout,
		DialerRetries: 1,
		ReadTimeout:   cfg.OpTimeout,
		WriteTimeout:  cfg.OpTimeout,
		// The per-round context deadline (OpTimeout) also bounds the
		// socket, so a frozen node answers nothing within OpTimeout.
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
	n := &redisNode{addr: addr, uopt: uopt}
	n.client.Store(&clientBox{redis.NewUniversalClient(uopt)})
	return n
}

func (n *redisNode) c() redis.UniversalClient { return n.client.Load().c }

// switchToCluster replaces the plain client by a cluster client. The old
// client stays open until close, as commands may still be using it.
func (n *redisNode) switchToCluster() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cluster.Load() {
		return
	}
	o := *n.uopt
	o.IsClusterMode = true
	n.old = append(n.old, n.c())
	n.client.Store(&clientBox{redis.NewUniversalClient(&o)})
	n.cluster.Store(true)
}

// run evaluates s on the node (EVALSHA, falling back to EVAL when the
// node lost its script cache) and follows a cluster redirection once.
func (n *redisNode) run(ctx context.Context, s *redis.Script, keys []string, args ...any) (any, error) {
	v, err := s.Run(ctx, n.c(), keys, args...).Result()
	if err != nil && !n.cluster.Load() && isRedirect(err) {
		n.switchToCluster()
		v, err = s.Run(ctx, n.c(), keys, args...).Result()
	}
	return v, err
}

func (n *redisNode) get(ctx context.Context, key string) (string, error) {
	v, err := n.c().Get(ctx, key).Result()
	if err != nil && !n.cluster.Load() && isRedirect(err) {
		n.switchToCluster()
		v, err = n.c().Get(ctx, key).Result()
	}
	return v, err
}

func isRedirect(err error) bool {
	if _, ok := redis.IsMovedError(err); ok {
		return true
	}
	_, ok := redis.IsAskError(err)
	return ok
}

// observe logs a node's transitions between reachable and unreachable,
// once each way. Errors caused by the caller's own context are not the
// node's fault and are ignored.
func (r *redlock) observe(parent context.Context, n *redisNode, err error) {
	if err == nil || errors.Is(err, redis.Nil) {
		if n.down.Swap(false) {
			r.log.Info("locking: redis node reachable again", "node", n.addr)
		}
		return
	}
	if parent.Err() != nil {
		return
	}
	if !n.down.Swap(true) {
		r.log.Warn("locking: redis node unreachable", "node", n.addr, "error", err.Error())
	}
}

func (r *redlock) key(k Key) string {
	return r.prefix + ":{" + k.Family + "}:" + k.Name
}

func (r *redlock) fenceKey(family string) string {
	return r.prefix + ":{" + family + "}:fence"
}

// fenceName is the Name reserved for a family's fencing counter.
const fenceName = "fence"

func checkKey(k Key) error {
	if k.Family == "" {
		return fmt.Errorf("locking: key %q: empty family", k)
	}
	if k.Name == "" || k.Name == fenceName {
		return fmt.Errorf("locking: key %q: name must be non-empty and not %q", k, fenceName)
	}
	return nil
}

// fanout calls f for every node in parallel (node 0 on the calling
// goroutine) under one OpTimeout deadline, and waits for all of them.
// mask, when non-nil, selects the nodes.
func (r *redlock) fanout(ctx context.Context, mask []bool, f func(ctx context.Context, i int, n *redisNode)) {
	ctx, cancel := context.WithTimeout(ctx, r.opTimeout)
	defer cancel()
	var wg sync.WaitGroup
	first := -1
	for i, n := range r.nodes {
		if mask != nil && !mask[i] {
			continue
		}
		if first < 0 {
			first = i
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(ctx, i, n)
		}()
	}
	if first >= 0 {
		f(ctx, first, r.nodes[first])
	}
	wg.Wait()
}

// nodeErrs turns per-node errors into one errors.Join of *NodeError.
func (r *redlock) nodeErrs(errs []error) error {
	var out []error
	for i, err := range errs {
		if err != nil {
			out = append(out, &NodeError{Addr: r.nodes[i].addr, Err: err})
		}
	}
	return errors.Join(out...)
}

type acqReply struct {
	won   bool
	fence uint64 // the family counter (before this acquisition raised it)
	value string // the value found on a node that said no
	err   error
}

func (r *redlock) acquire(ctx context.Context, key Key, value string, ttl time.Duration) (uint64, error) {
	if err := checkKey(key); err != nil {
		return 0, err
	}
	keys := []string{r.key(key), r.fenceKey(key.Family)}
	ttlMS := max(ttl.Milliseconds(), 1)
	proposal := r.lastToken(key.Family) + 1
	replies := make([]acqReply, len(r.nodes))
	args := []any{value, ttlMS, proposal} // boxed once, shared by the nodes
	r.fanout(ctx, nil, func(nctx context.Context, i int, n *redisNode) {
		v, err := n.run(nctx, acquireScript, keys, args...)
		r.observe(ctx, n, err)
		replies[i] = parseAcquire(v, err)
	})

	won, sawDone := 0, false
	var seen, before uint64 // highest counter seen anywhere / on the winners
	for _, rep := range replies {
		seen = max(seen, rep.fence)
		if rep.won && rep.err == nil {
			won++
			before = max(before, rep.fence)
		} else if strings.HasPrefix(rep.value, donePrefix) {
			sawDone = true
		}
	}
	// A done marker on any node means the work already ran, even when a
	// majority let us in (the marker may have expired early or been lost
	// on the others): the acquisition is refused.
	if won >= r.quorum && !sawDone && ctx.Err() == nil {
		// Quorum register. The winners' counters include the latest token
		// made durable on any majority (two majorities intersect). If the
		// proposal is above all of them, it is a valid token and the script
		// already wrote it to the winners, a majority: done in one round.
		if proposal > before {
			r.learnToken(key.Family, proposal)
			return proposal, nil
		}
		// Our knowledge was stale: take one more than the maximum and make
		// it durable on a majority before handing it out.
		token := before + 1
		err := r.writeFence(ctx, key, keys[1], token, replies)
		if err == nil {
			r.learnToken(key.Family, token)
			return token, nil
		}
		if ctx.Err() == nil {
			r.undo(ctx, keys[0], value, nil)
			return 0, err
		}
	}
	r.learnToken(key.Family, seen)
	// Failed: leave nothing behind where we wrote or may have written.
	// (A counter raised to our proposal on some nodes stays raised: that
	// only makes later tokens larger, never smaller.)
	undoMask := make([]bool, len(r.nodes))
	for i, rep := range replies {
		undoMask[i] = rep.won || rep.err != nil
	}
	r.undo(ctx, keys[0], value, undoMask)
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return 0, r.acquireFailure(key, replies)
}

// lastToken returns the highest token this locker has seen in family: its
// own acquisitions and the counters the nodes reported to it.
func (r *redlock) lastToken(family string) uint64 {
	r.tokMu.Lock()
	defer r.tokMu.Unlock()
	return r.tokens[family]
}

func (r *redlock) learnToken(family string, t uint64) {
	r.tokMu.Lock()
	defer r.tokMu.Unlock()
	if t <= r.tokens[family] {
		return
	}
	if r.tokens == nil || len(r.tokens) >= maxKnownFamilies {
		// A hint only: forgetting costs one extra round on the next
		// acquisition of each family.
		r.tokens = make(map[string]uint64)
	}
	r.tokens[family] = t
}

// maxKnownFamilies bounds the token hints kept per locker.
const maxKnownFamilies = 4096

// acquireFailure classifies a failed acquisition.
func (r *redlock) acquireFailure(key Key, replies []acqReply) error {
	counts := map[string]int{}
	answered := 0
	var errs []error
	var done *HeldError
	for _, rep := range replies {
		errs = append(errs, rep.err)
		if rep.err != nil {
			continue
		}
		answered++
		if rep.won {
			continue
		}
		counts[rep.value]++
		if done == nil && strings.HasPrefix(rep.value, donePrefix) {
			done = parseHeld(key, rep.value)
		}
	}
	if done != nil {
		// A done marker anywhere means the slot already ran.
		return done
	}
	if answered < r.quorum || len(counts) == 0 {
		return &QuorumError{Op: "acquire", Key: key, Need: r.quorum, Got: answered, Err: r.nodeErrs(errs)}
	}
	top, topN := "", 0
	for v, c := range counts {
		if c > topN || (c == topN && v < top) {
			top, topN = v, c
		}
	}
	held := parseHeld(key, top)
	if topN >= r.quorum {
		return held
	}
	return &SplitVoteError{Held: held}
}

func parseAcquire(v any, err error) acqReply {
	if err != nil {
		return acqReply{err: err}
	}
	arr, ok := v.([]any)
	if !ok || len(arr) < 2 {
		return acqReply{err: fmt.Errorf("unexpected acquire reply %T", v)}
	}
	flag, _ := arr[0].(int64)
	s, _ := arr[1].(string)
	if flag != 1 {
		rep := acqReply{value: s}
		if len(arr) > 2 {
			fs, _ := arr[2].(string)
			rep.fence, _ = strconv.ParseUint(fs, 10, 64) // a hint only
		}
		return rep
	}
	f, perr := strconv.ParseUint(s, 10, 64)
	if perr != nil {
		// We did set the key here: mark it won so it is undone.
		return acqReply{won: true, err: fmt.Errorf("fence counter %q: %w", s, perr)}
	}
	return acqReply{won: true, fence: f}
}

// writeFence max-assigns token to the family counter on every node that
// answered the acquire round, and needs a majority to succeed.
func (r *redlock) writeFence(ctx context.Context, key Key, fenceKey string, token uint64, replies []acqReply) error {
	mask := make([]bool, len(r.nodes))
	errs := make([]error, len(r.nodes))
	for i, rep := range replies {
		mask[i] = rep.err == nil
		errs[i] = rep.err
	}
	return r.maxSet(ctx, "acquire", key, fenceKey, token, mask, errs)
}

// maxSet raises redisKey to at least v on the masked nodes (all when mask
// is nil) and needs a majority to succeed. errs holds the failures known
// beforehand for unmasked nodes; it is filled in for the others.
func (r *redlock) maxSet(ctx context.Context, op string, key Key, redisKey string, v any, mask []bool, errs []error) error {
	var ok atomic.Int32
	keys := []string{redisKey}
	args := []any{v}
	r.fanout(ctx, mask, func(nctx context.Context, i int, n *redisNode) {
		_, err := n.run(nctx, maxsetScript, keys, args...)
		r.observe(ctx, n, err)
		if err != nil {
			errs[i] = err
			return
		}
		ok.Add(1)
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	if got := int(ok.Load()); got < r.quorum {
		return &QuorumError{Op: op, Key: key, Need: r.quorum, Got: got, Err: r.nodeErrs(errs)}
	}
	return nil
}

// undo deletes key where it still holds value, on the masked nodes (all
// when mask is nil). It runs detached from ctx's cancellation: a canceled
// acquisition must still clean up.
func (r *redlock) undo(ctx context.Context, key, value string, mask []bool) {
	dctx := context.WithoutCancel(ctx)
	keys := []string{key}
	args := []any{value, "", 0}
	r.fanout(dctx, mask, func(nctx context.Context, i int, n *redisNode) {
		_, err := n.run(nctx, releaseScript, keys, args...)
		r.observe(dctx, n, err)
	})
}

// compareAct runs a compare-and-act script on every node and classifies
// the answers: nil on a majority of 1s, ErrLockLost when so many nodes
// answered 0 that a majority of 1s is impossible, else a *QuorumError.
func (r *redlock) compareAct(ctx context.Context, op string, key Key, s *redis.Script, args ...any) error {
	keys := []string{r.key(key)}
	errs := make([]error, len(r.nodes))
	var ok, notOurs atomic.Int32
	r.fanout(ctx, nil, func(nctx context.Context, i int, n *redisNode) {
		v, err := n.run(nctx, s, keys, args...)
		r.observe(ctx, n, err)
		switch {
		case err != nil:
			errs[i] = err
		case v == int64(1):
			ok.Add(1)
		default:
			notOurs.Add(1)
		}
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	if int(ok.Load()) >= r.quorum {
		return nil
	}
	if len(r.nodes)-int(notOurs.Load()) < r.quorum {
		return ErrLockLost
	}
	return &QuorumError{Op: op, Key: key, Need: r.quorum, Got: int(ok.Load()), Err: r.nodeErrs(errs)}
}

func (r *redlock) extend(ctx context.Context, key Key, value string, ttl time.Duration) error {
	return r.compareAct(ctx, "extend", key, extendScript, value, max(ttl.Milliseconds(), 1))
}

func (r *redlock) release(ctx context.Context, key Key, value, doneValue string, doneTTL time.Duration) error {
	var ms int64
	if doneTTL > 0 {
		ms = max(doneTTL.Milliseconds(), 1)
	}
	return r.compareAct(ctx, "release", key, releaseScript, value, doneValue, ms)
}

func (r *redlock) advanceRecord(ctx context.Context, key Key, v int64) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if v > maxRecord || v < -maxRecord {
		return fmt.Errorf("locking: record %s: value %d out of range (|v| <= 2^53)", key, v)
	}
	return r.maxAssign(ctx, key, v)
}

// maxAssign raises the record key to at least v on a majority of all nodes.
func (r *redlock) maxAssign(ctx context.Context, key Key, v int64) error {
	return r.maxSet(ctx, "record", key, r.key(key), v, nil, make([]error, len(r.nodes)))
}

func (r *redlock) readRecord(ctx context.Context, key Key) (int64, error) {
	if err := checkKey(key); err != nil {
		return 0, err
	}
	k := r.key(key)
	errs := make([]error, len(r.nodes))
	vals := make([]int64, len(r.nodes))
	r.fanout(ctx, nil, func(nctx context.Context, i int, n *redisNode) {
		s, err := n.get(nctx, k)
		r.observe(ctx, n, err)
		switch {
		case errors.Is(err, redis.Nil):
		case err != nil:
			errs[i] = err
		default:
			vals[i], errs[i] = strconv.ParseInt(s, 10, 64)
		}
	})
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	answered, best, differ := 0, int64(0), false
	for i, err := range errs {
		if err != nil {
			continue
		}
		if answered > 0 && vals[i] != best {
			differ = true
		}
		if answered == 0 || vals[i] > best {
			best = vals[i]
		}
		answered++
	}
	if answered < r.quorum {
		return 0, &QuorumError{Op: "record", Key: key, Need: r.quorum, Got: answered, Err: r.nodeErrs(errs)}
	}
	if differ {
		// Read repair: a value seen on only part of the majority is made
		// durable on a majority before it is returned, so a later read
		// through any majority cannot return less.
		if err := r.maxAssign(ctx, key, best); err != nil {
			return 0, err
		}
	}
	return max(best, 0), nil
}

func (r *redlock) ping(ctx context.Context) ([]NodeStatus, error) {
	st := make([]NodeStatus, len(r.nodes))
	errs := make([]error, len(r.nodes))
	r.fanout(ctx, nil, func(nctx context.Context, i int, n *redisNode) {
		err := n.c().Ping(nctx).Err()
		r.observe(ctx, n, err)
		st[i] = NodeStatus{Addr: n.addr, Up: err == nil, Err: err}
		errs[i] = err
	})
	if err := ctx.Err(); err != nil {
		return st, err
	}
	up := 0
	for _, s := range st {
		if s.Up {
			up++
		}
	}
	if up < r.quorum {
		return st, &QuorumError{Op: "ping", Need: r.quorum, Got: up, Err: r.nodeErrs(errs)}
	}
	return st, nil
}

func (r *redlock) mode() string { return r.modeStr }

func (r *redlock) close() error {
	var errs []error
	for _, n := range r.nodes {
		n.mu.Lock()
		cls := append(n.old, n.c())
		n.old = nil
		n.mu.Unlock()
		for _, c := range cls {
			if err := c.Close(); err != nil && !errors.Is(err, redis.ErrClosed) {
				errs = append(errs, &NodeError{Addr: n.addr, Err: err})
			}
		}
	}
	return errors.Join(errs...)
}

// go-redis writes its own messages (failed dials, pool events) through a
// process-wide logger, by default as plain text on stderr. routeRedisLog
// sends them to the most recently built Redlock's logger at debug level, so
// they share its format and stay quiet at info; the lock layer itself logs
// node state changes once, at warn and info.
var redisLog atomic.Pointer[slog.Logger]

var routeOnce sync.Once

func routeRedisLog(l *slog.Logger) {
	redisLog.Store(l)
	routeOnce.Do(func() { redis.SetLogger(redisLogger{}) })
}

type redisLogger struct{}

func (redisLogger) Printf(ctx context.Context, format string, v ...any) {
	if l := redisLog.Load(); l != nil && l.Enabled(ctx, slog.LevelDebug) {
		l.DebugContext(ctx, "go-redis: "+fmt.Sprintf(format, v...))
	}
}
