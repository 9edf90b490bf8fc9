package locking

import (
	"context"
	"errors"

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

// isRead reports whether op is a pure read served by the reader.
func isRead(op Op) bool { return op.Kind() == OpLog }

// newReader builds the node's reader client from the lock client's
// options.
func newReader(uopt *redis.UniversalOptions) redis.UniversalClient {
	o := *uopt
	o.PoolSize, o.MinIdleConns = readerPool, 0
	return redis.NewUniversalClient(&o)
}

// read runs op on the reader connection, one read at a time per node,
// with the same script and cluster handling as the pipeline.
func (n *redisNode) read(ctx context.Context, op Op) (Result, error) {
	select {
	case n.reading <- struct{}{}:
	case <-ctx.Done():
		return Result{}, &readError{ctx.Err()}
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
