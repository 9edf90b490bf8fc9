package locking

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Batching: a redisNode sends its requests in pipelines. Every Do (and
// every round's start) queues one call; one sender goroutine per node
// takes whatever has queued — one call when the node is idle, hundreds
// when many slots fire in the same instant — and sends it as one pipeline
// on one connection: one write and one read for the whole batch, on the
// client and on the server. Nothing waits for a batch to fill: a call that
// arrives while the node is idle goes out at once, and calls that arrive
// while a pipeline is in flight form the next one. Each call is still its
// own script or command, atomic on the node and answered alone; batching
// changes the cost of a call, not what it does.
//
// A call whose context ended before its batch was sent is not sent, but
// for a release (it only ends what holds its own value; an undo must reach
// a node that may still run the acquisition it undoes). A batch's deadline
// is the latest of its live calls' (at most OpTimeout from now); each
// caller stops waiting at its own deadline, as before.

// maxBatch bounds the calls of one pipeline: a batch of scripts runs on
// the node back to back, and must answer well within the op timeout.
const maxBatch = 256

// nodeCall is one queued request and, once done is closed, its answer.
type nodeCall struct {
	ctx  context.Context
	op   Op
	res  Result
	err  error
	done chan struct{}
	cmd  func() (any, error) // the queued command's reply, after Exec
}

func (c *nodeCall) finish(res Result, err error) {
	c.res, c.err = res, err
	close(c.done)
}

// wait returns the call's answer, or ctx.Err() when ctx ends first.
func (c *nodeCall) wait() (Result, error) {
	select {
	case <-c.done:
		return c.res, c.err
	case <-c.ctx.Done():
		return Result{}, c.ctx.Err()
	}
}

// batcher is a node's queue and the state of its sender goroutine.
type batcher struct {
	mu      sync.RWMutex // held for reading while a call is queued
	queue   chan *nodeCall
	stop    chan struct{}
	started bool
	closed  bool
	wg      sync.WaitGroup
}

// queueDepth is how many calls may wait for a node's sender; a caller
// beyond it waits (under its own deadline) for room.
const queueDepth = 4 * maxBatch

// start queues op and returns its call; the sender goroutine starts with
// the first call, so an unused node costs nothing.
func (n *redisNode) start(ctx context.Context, op Op) *nodeCall {
	c := &nodeCall{ctx: ctx, op: op, done: make(chan struct{})}
	b := &n.batch
	b.mu.RLock()
	if !b.started && !b.closed {
		b.mu.RUnlock()
		b.mu.Lock()
		if !b.started && !b.closed {
			b.started = true
			b.queue = make(chan *nodeCall, queueDepth)
			b.stop = make(chan struct{})
			b.wg.Add(1)
			go n.send()
		}
		b.mu.Unlock()
		b.mu.RLock()
	}
	// The read lock is held while queuing, so that closeBatch, which takes
	// the write lock, never leaves a call in the queue unanswered.
	defer b.mu.RUnlock()
	if b.closed {
		c.finish(Result{}, redis.ErrClosed)
		return c
	}
	select {
	case b.queue <- c:
	case <-ctx.Done():
		c.finish(Result{}, ctx.Err())
	}
	return c
}

// send is the node's sender: it takes the queued calls in batches and
// sends each batch as one pipeline, until the node is closed.
func (n *redisNode) send() {
	b := &n.batch
	defer b.wg.Done()
	batch := make([]*nodeCall, 0, maxBatch)
	for {
		select {
		case c := <-b.queue:
			batch = append(batch[:0], c)
		case <-b.stop:
			n.drain()
			return
		}
	fill:
		for len(batch) < maxBatch {
			select {
			case c := <-b.queue:
				batch = append(batch, c)
			default:
				break fill
			}
		}
		n.exec(batch)
		clear(batch)
	}
}

// drain answers the calls still queued when the node closes.
func (n *redisNode) drain() {
	for {
		select {
		case c := <-n.batch.queue:
			c.finish(Result{}, redis.ErrClosed)
		default:
			return
		}
	}
}

// exec sends the live calls of batch as one pipeline and answers each.
// Calls refused for a missing script are sent again with the script's
// source (EVAL); calls redirected by a cluster endpoint switch the node to
// its cluster client and are sent again there. Neither was executed.
func (n *redisNode) exec(batch []*nodeCall) {
	live, late := batch[:0:0], batch[:0:0]
	var deadline time.Time
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			if c.op.Kind() != OpRelease {
				c.finish(Result{}, err) // its sender gave up: never send it late
				continue
			}
			// A release is sent however late: it only ends what holds its
			// own value, and an undo must reach a node that may still run
			// the acquisition it undoes (redlock's undo).
			late = append(late, c)
			continue
		}
		if d, ok := c.ctx.Deadline(); ok && d.After(deadline) {
			deadline = d
		}
		live = append(live, c)
	}
	// Late releases first, in a pipeline of their own with a whole
	// OpTimeout (a short deadline of a live call must not keep them off
	// the wire), then the live calls, no later than the last caller waits.
	if len(late) > 0 {
		n.execBy(late, time.Time{})
	}
	if len(live) > 0 {
		n.execBy(live, deadline)
	}
}

// execBy sends calls as one pipeline within OpTimeout from now and, when
// deadline is set, by deadline, and answers each.
func (n *redisNode) execBy(calls []*nodeCall, deadline time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), n.opTimeout)
	defer cancel()
	if !deadline.IsZero() {
		var cancelAt context.CancelFunc
		ctx, cancelAt = context.WithDeadline(ctx, deadline)
		defer cancelAt()
	}
	again := n.pipe(ctx, calls, false)
	if len(again) > 0 {
		again = n.pipe(ctx, again, true)
	}
	if len(again) > 0 && !n.cluster.Load() {
		n.switchToCluster()
		n.pipe(ctx, again, true)
	}
}

// pipe sends calls in one pipeline (scripts as EVAL when eval is set) and
// answers them, except those it returns: refused unexecuted for a missing
// script (when !eval) or redirected to another cluster node (when the node
// is not yet a cluster client), for the caller to send again.
func (n *redisNode) pipe(ctx context.Context, calls []*nodeCall, eval bool) (again []*nodeCall) {
	p := n.c().Pipeline()
	for _, c := range calls {
		c.cmd = queueOp(ctx, p, c.op, eval)
	}
	cmds, execErr := p.Exec(ctx)
	// Exec's error is the first command's error, or, when no command
	// carries one, the connection's (a refused AUTH is not stamped on the
	// commands): then none of them ran.
	for _, cmd := range cmds {
		if cmd.Err() != nil {
			execErr = nil
			break
		}
	}
	for _, c := range calls {
		v, err := c.cmd()
		if execErr != nil {
			v, err = nil, execErr
		}
		switch {
		case err != nil && !eval && redis.HasErrorPrefix(err, "NOSCRIPT"):
			again = append(again, c)
			continue
		case err != nil && !n.cluster.Load() && isRedirect(err):
			again = append(again, c)
			continue
		}
		c.finish(reply(c.op, v, err))
	}
	return again
}

// closeBatch stops the sender and answers what is still queued.
func (n *redisNode) closeBatch() {
	b := &n.batch
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	started := b.started
	b.mu.Unlock()
	if started {
		close(b.stop)
		b.wg.Wait()
	}
}
