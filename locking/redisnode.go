package locking

import (
	"context"
	"crypto/tls"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed redlock_acquire.lua
	acquireLua    string
	acquireScript = redis.NewScript(acquireLua)
	//go:embed redlock_log.lua
	logLua    string
	logScript = redis.NewScript(logLua)
	//go:embed redlock_logadd.lua
	logAddLua    string
	logAddScript = redis.NewScript(logAddLua)
	//go:embed redlock_pause.lua
	pauseLua    string
	pauseScript = redis.NewScript(pauseLua)
	//go:embed redlock_fence.lua
	fenceLua    string
	fenceScript = redis.NewScript(fenceLua)
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
	n := &redisNode{addr: addr, opTimeout: cfg.OpTimeout, uopt: uopt, reading: make(chan struct{}, 1)}
	n.batch.opTimeout = cfg.OpTimeout
	n.client.Store(&clientBox{redis.NewUniversalClient(uopt)})
	n.reader.Store(&clientBox{newReader(uopt)})
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
	n.old = append(n.old, n.c(), n.reader.Load().c)
	n.client.Store(&clientBox{redis.NewUniversalClient(&o)})
	n.reader.Store(&clientBox{newReader(&o)})
	n.cluster.Store(true)
}

// Do runs op as its script (EVALSHA, falling back to EVAL when the node
// lost its script cache) or command, following a cluster redirection once.
// It is sent in the node's next pipeline (redisbatch.go).
func (n *redisNode) Do(ctx context.Context, op Op) (Result, error) {
	if isRead(op) {
		return n.read(ctx, op)
	}
	if n.claim() {
		c := n.batch.newCall(ctx, op)
		n.sendOwn(c)
		return c.wait()
	}
	return n.start(ctx, op).wait()
}

// queueOp adds op to the pipeline p, as its script (EVALSHA, or EVAL when
// eval is set) or command, and returns how to read its reply after Exec.
func queueOp(ctx context.Context, p redis.Pipeliner, op Op, eval bool) func() (any, error) {
	script := func(s *redis.Script, keys []string, args ...any) func() (any, error) {
		var cmd *redis.Cmd
		if eval {
			cmd = s.Eval(ctx, p, keys, args...)
		} else {
			cmd = s.EvalSha(ctx, p, keys, args...)
		}
		return cmd.Result
	}
	switch op := op.(type) {
	case AcquireOp:
		keys := []string{op.Key, op.Fence}
		if op.Field != "" {
			also := op.Key // unused: stands in, with the call's hash tag
			if op.AlsoValue != "" {
				also = op.Also
			}
			keys = append(keys, op.Claims, op.Lives, op.Pause, also)
		}
		keys = append(keys, op.Tomb)
		return script(acquireScript, keys, op.Value, op.TTL, op.N, op.Field, op.AlsoValue, op.SentMS, op.FreshMS)
	case ExtendOp:
		keys := []string{op.Key}
		start := "0"
		if op.Field != "" {
			keys = append(keys, op.Lives, op.Claims)
			if op.Start {
				start = "1"
			}
		}
		return script(extendScript, keys, op.Value, op.TTL, op.Field, start)
	case ReleaseOp:
		keys := []string{op.Key}
		if op.Field != "" {
			// Unused optional keys stand in as the lock key itself: every
			// key of one call shares its hash tag.
			also, record := op.Key, op.Key
			if op.AlsoValue != "" {
				also = op.Also
			}
			if op.RecordN != 0 {
				record = op.Record
			}
			keys = append(keys, op.Claims, op.Lives, op.Log, also, record)
		}
		if op.TombTTL > 0 {
			keys = append(keys, op.Tomb)
		}
		return script(releaseScript, keys, op.Value, op.Done, op.DoneTTL, op.Field, op.Entry, op.N, op.Keep, op.AlsoValue, op.RecordN, op.TombTTL)
	case LogOp:
		return script(logScript, []string{op.Key}, op.Since, op.Limit)
	case LogAddOp:
		fence, absent := op.Key, 0 // unused: stands in, with the call's hash tag
		if op.RecordN != 0 {
			fence = op.Record
		}
		if op.IfAbsent {
			absent = 1
		}
		return script(logAddScript, []string{op.Key, fence}, op.Entry, op.N, op.Value, op.Keep, op.Floor, op.RecordN, absent)
	case ClaimsOp:
		cmd := p.HKeys(ctx, op.Claims)
		return func() (any, error) { return cmd.Result() }
	case PauseOp:
		return script(pauseScript, []string{op.Key}, op.Value, op.N)
	case FenceOp:
		return script(fenceScript, []string{op.Key}, op.N)
	case MaxSetOp:
		return script(maxsetScript, []string{op.Key}, op.N)
	case GetOp:
		cmd := p.Get(ctx, op.Key)
		return func() (any, error) { return cmd.Result() }
	case PingOp:
		cmd := p.Ping(ctx)
		return func() (any, error) { return cmd.Result() }
	}
	err := fmt.Errorf("locking: unknown op %T", op)
	return func() (any, error) { return nil, err }
}

// reply turns a command's reply into op's Result.
func reply(op Op, v any, err error) (Result, error) {
	if op.Kind() == OpGet && errors.Is(err, redis.Nil) {
		return Result{Nil: true}, nil
	}
	if err != nil {
		return Result{}, err
	}
	return parseReply(op, v)
}

// parseReply turns a script's or command's reply into a Result.
func parseReply(op Op, v any) (Result, error) {
	switch op.Kind() {
	case OpAcquire, OpFence, OpPause:
		arr, ok := v.([]any)
		if !ok || len(arr) < 2 {
			return Result{}, fmt.Errorf("unexpected reply %T", v)
		}
		return parseArrayReply(op.Kind(), arr), nil
	case OpClaims:
		fields, ok := v.([]string)
		if !ok {
			return Result{}, fmt.Errorf("unexpected reply %T", v)
		}
		return Result{Fields: fields}, nil
	case OpExtend, OpRelease, OpMaxSet, OpLogAdd:
		n, ok := v.(int64)
		if !ok {
			return Result{}, fmt.Errorf("unexpected reply %T", v)
		}
		switch op.Kind() {
		case OpMaxSet:
			return Result{N: n}, nil
		case OpRelease:
			return Result{Status: n & 1, AlsoStatus: n >> 1}, nil
		}
		return Result{Status: n}, nil
	case OpLog:
		return parseLogReply(v)
	case OpGet:
		s, _ := v.(string)
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return Result{}, fmt.Errorf("record %q: %w", s, err)
		}
		return Result{N: n}, nil
	}
	return Result{}, nil
}

// parseArrayReply reads the array an acquire, fence or pause script
// returns: its status first, then what the kind adds.
func parseArrayReply(kind OpKind, arr []any) Result {
	var r Result
	r.Status, _ = arr[0].(int64)
	switch kind {
	case OpFence:
		r.N, _ = arr[1].(int64)
		return r
	case OpPause:
		r.Value, _ = arr[1].(string)
		return r
	}
	r.Value, _ = arr[1].(string)
	if len(arr) > 2 {
		r.N, _ = arr[2].(int64)
	}
	if len(arr) > 4 {
		r.Orphan, _ = arr[3].(string)
		r.OrphanValue, _ = arr[4].(string)
	}
	if len(arr) > 5 {
		r.Pause, _ = arr[5].(string)
	}
	if len(arr) > 6 {
		r.AlsoStatus, _ = arr[6].(int64)
	}
	if len(arr) > 7 {
		r.Claim, _ = arr[7].(string)
	}
	return r
}

// parseLogReply reads a log read's (value, score) pairs.
func parseLogReply(v any) (Result, error) {
	arr, ok := v.([]any)
	if !ok {
		return Result{}, fmt.Errorf("unexpected reply %T", v)
	}
	var r Result
	for i := 0; i+1 < len(arr); i += 2 {
		val, _ := arr[i].(string)
		sc, _ := arr[i+1].(string)
		n, err := strconv.ParseFloat(sc, 64)
		if err != nil {
			return Result{}, fmt.Errorf("log score %q: %w", sc, err)
		}
		r.Log = append(r.Log, LogEntry{Score: int64(n), Value: val})
	}
	return r, nil
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
