package redlock

import (
	"context"
	"errors"
	"strings"

	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/internal/wire"

	"github.com/redis/go-redis/v9"
)

// Reads of the read model (OpLog: slot history, the fleet log — what the
// status page, `status` and `history` read, up to history.keep entries per
// node) go over their own connections, not the node's lock pipeline
// (redisbatch.go): one reader connection per node, one read at a time, so
// a storm of page loads queues behind itself — and gives up at its round's
// deadline — while claims, renewals and ends keep their pipeline and
// connections to themselves. Redis runs one command at a time, so a read
// still takes server time; the page bounds that by capping its windows at
// history.keep.

// readError is a failed read. It says nothing of the node's health (the
// read may have waited for the reader, or been slow for its size), so the
// locker's reachability tracking ignores it (redlock.observe): a page storm
// never turns into "redis node unreachable" warnings.
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// isReadError reports whether err is a failed read.
func isReadError(err error) bool {
	var re *readError
	return errors.As(err, &re)
}

// readerPool is the reader client's connection pool size.
const readerPool = 2

// isRead reports whether op is a pure read served by the reader: the
// read model's, and a clock read (clocks.go), which waits behind no
// claim there.
func isRead(op driver.Op) bool {
	k := op.Kind()
	return k == driver.OpLog || k == driver.OpDone || k == driver.OpTime
}

// newReader builds the node's reader client from the lock client's
// options.
func newReader(uopt *redis.UniversalOptions) redis.UniversalClient {
	o := *uopt
	o.PoolSize, o.MinIdleConns = readerPool, 0
	return redis.NewUniversalClient(&o)
}

// read runs op on the reader connection, one read at a time per node,
// with the same script and cluster handling as the pipeline.
func (n *redisNode) read(ctx context.Context, op driver.Op) (driver.Result, error) {
	if d, ok := op.(driver.DoneOp); ok {
		return n.readDone(ctx, d)
	}
	if op.Kind() == driver.OpTime {
		// Not behind a page's read: the wait would be the read's
		// uncertainty.
		return n.readTime(ctx)
	}
	select {
	case n.reading <- struct{}{}:
	case <-ctx.Done():
		return driver.Result{}, &readError{ctx.Err()}
	}
	defer func() { <-n.reading }()
	run := func(eval bool) (any, error) {
		p := n.reader.Load().c.Pipeline()
		cmd := queueOp(ctx, p, op, eval)
		_, _ = p.Exec(ctx)
		return cmdReply(cmd)
	}
	v, err := run(false)
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		v, err = run(true)
	}
	if err != nil && !n.cluster.Load() && isRedirect(err) {
		n.switchToCluster()
		v, err = run(true)
	}
	res, err := reply(op, v, err)
	if err != nil {
		return res, &readError{err}
	}
	return res, nil
}

// readDone answers a DoneOp on the reader: one MGET on a node that is
// not a cluster (one command, whatever the keys' hash tags), else one
// pipeline of GETs (a cluster refuses an MGET across slots). It does not
// wait for the page reads' turn (reading): asked by fallback replicas a
// second after their slots (the scheduler's candidates), a read that
// waited behind a page would come too late to be of use. The reader's
// pool has a connection for it beside the page's.
func (n *redisNode) readDone(ctx context.Context, op driver.DoneOp) (driver.Result, error) {
	var vals []string
	var err error
	if !n.cluster.Load() {
		vals, err = n.mgetDone(ctx, op.Keys)
		if err != nil && (isRedirect(err) || redis.HasErrorPrefix(err, "CROSSSLOT")) {
			n.switchToCluster()
		}
	}
	if n.cluster.Load() {
		vals, err = n.getsDone(ctx, op.Keys)
	}
	if err != nil {
		return driver.Result{}, &readError{err}
	}
	res := driver.Result{Fields: make([]string, len(vals))}
	for i, v := range vals {
		if strings.HasPrefix(v, wire.DonePrefix) {
			res.Fields[i] = v
		}
	}
	return res, nil
}

// readTime answers a TimeOp on the reader (TIME), without waiting for
// the page reads' turn.
func (n *redisNode) readTime(ctx context.Context) (driver.Result, error) {
	t, err := n.reader.Load().c.Time(ctx).Result()
	if err != nil {
		return driver.Result{}, &readError{err}
	}
	return driver.Result{N: t.UnixMicro()}, nil
}

// mgetDone reads keys with one MGET ("" where absent).
func (n *redisNode) mgetDone(ctx context.Context, keys []string) ([]string, error) {
	got, err := n.reader.Load().c.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, err
	}
	vals := make([]string, len(keys))
	for i := range min(len(got), len(keys)) {
		vals[i], _ = got[i].(string)
	}
	return vals, nil
}

// getsDone reads keys with one pipeline of GETs ("" where absent).
func (n *redisNode) getsDone(ctx context.Context, keys []string) ([]string, error) {
	p := n.reader.Load().c.Pipeline()
	cmds := make([]*redis.StringCmd, len(keys))
	for i, k := range keys {
		cmds[i] = p.Get(ctx, k)
	}
	_, _ = p.Exec(ctx)
	vals := make([]string, len(keys))
	for i, c := range cmds {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) { // absent: redis.Nil
			return nil, err
		}
		vals[i] = c.Val()
	}
	return vals, nil
}
