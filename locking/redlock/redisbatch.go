package redlock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"

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
// changes the cost of a call, not what it does — also where a pipeline's
// calls of one script are folded into one script call (redisfold.go).
//
// A lone caller (the node idle: nothing queued, no pipeline in flight)
// sends its own call on its own goroutine (sendOwn), sparing the hop to
// the sender and back; calls that arrive meanwhile queue for the sender.
//
// Honest failures. A call that was never written (its deadline passed in
// the queue, or was too close to let the node answer: deadline-aware
// sending, below its recent round trip) is answered ErrBusy — this
// replica's overload, nothing done on the node, no node fault. A call that
// was written is the node's to answer: its pipeline has maxWaitFactor ×
// OpTimeout from its write, and when that pipeline fails the node is
// reported (watch) —
// not when a caller who queued long stops waiting for it. A release is
// sent however late (it only ends what holds its own value; an undo must
// reach a node that may still run the acquisition it undoes).

// maxBatch bounds the calls of one pipeline, and so of one fold: a batch
// of scripts runs on the node back to back (a fold as one step), and must
// answer well within the op timeout. A fold of this many claims took the
// node 5-9 ms on a loaded 2-core host (TestFoldLatency), under a tenth of
// the default op timeout.
const maxBatch = 256

// batcher is a node's queue and the state of its sender goroutine.
type batcher struct {
	mu      sync.Mutex
	queue   []*nodeCall
	owner   owner         // who sends the node's next pipeline
	wake    chan struct{} // tells the sender the queue has calls (capacity 1)
	stop    chan struct{}
	started bool
	closed  bool
	wg      sync.WaitGroup

	opTimeout time.Duration
	rtt       atomic.Int64 // recent pipeline round trip (ns, moving average)
	rttDev    atomic.Int64 // its mean deviation (ns, moving average)
	sentAt    atomic.Int64 // when the pipeline in flight was written (monoNow), 0 when none
	stalled   atomic.Int64 // how long the last pipeline went unanswered before it timed out (ns), 0 if it did not time out
	watch     atomic.Pointer[func(error)]
}

// owner says who is sending a node's pipelines: nobody (the node is
// idle), its sender goroutine (woken for the queued calls), or a lone
// caller sending its own call (sendOwn).
type owner uint8

const (
	ownerNone owner = iota
	ownerSender
	ownerCaller
)

// queueDepth is how many calls may wait for a node's sender: a caller
// beyond it is answered ErrBusy at once (nothing sent).
const queueDepth = 4 * maxBatch

// epoch anchors monoNow.
var epoch = time.Now()

// monoNow is monotonic nanoseconds for round trips and stalls. Network
// deadlines are wall-clock (a socket's), so these use the real time, not
// the injected Clock.
func monoNow() int64 { return int64(time.Since(epoch)) }

// newCall is a call of w under ctx and, when set, until.
func (b *batcher) newCall(ctx context.Context, until time.Time, w wireCall) *nodeCall {
	c := callPool.Get().(*nodeCall)
	c.ctx, c.until, c.op, c.b = ctx, until, w.op, b
	c.script, c.args = w.script, w.args
	if c.group = w.group; c.group != nil {
		c.group.left.Add(1) // before the call can be answered
	}
	return c
}

// call is a call of w under ctx and until, for sendOwn.
func (n *redisNode) call(ctx context.Context, until time.Time, w wireCall) *nodeCall {
	return n.batch.newCall(ctx, until, w)
}

// start queues w, under ctx and until, and returns its call; the sender
// goroutine starts with the first call, so an unused node costs nothing.
func (n *redisNode) start(ctx context.Context, until time.Time, w wireCall) *nodeCall {
	b := &n.batch
	c := b.newCall(ctx, until, w)
	op := w.op
	b.mu.Lock()
	switch {
	case b.closed:
		b.mu.Unlock()
		c.finish(driver.Result{}, redis.ErrClosed)
		return c
	case len(b.queue) >= queueDepth && op.Kind() != driver.OpRelease:
		b.mu.Unlock()
		c.state.Store(callDropped)
		c.finish(driver.Result{}, locking.ErrBusy)
		return c
	}
	if !b.started {
		b.started = true
		b.wake = make(chan struct{}, 1)
		b.stop = make(chan struct{})
		b.wg.Add(1)
		go n.send()
	}
	b.queue = append(b.queue, c)
	wake := b.owner == ownerNone
	if wake {
		b.owner = ownerSender
	}
	b.mu.Unlock()
	if wake {
		b.wakeSender()
	}
	return c
}

// wakeSender tells the sender that calls are queued (a wake-up already
// pending does as well).
func (b *batcher) wakeSender() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// claim makes the calling goroutine the node's sender for one call of its
// own, when the node is idle; it then must call sendOwn.
func (n *redisNode) claim() bool {
	b := &n.batch
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.owner != ownerNone || len(b.queue) > 0 || b.stalled.Load() != 0 {
		// A node whose last pipeline went unanswered: its calls go to
		// the sender, which may wait longer than a caller (releaseWait).
		return false
	}
	b.owner = ownerCaller
	return true
}

// sendOwn sends c, a call of the goroutine that claimed the node, on that
// goroutine, then hands the calls that queued meanwhile to the sender.
func (n *redisNode) sendOwn(c *nodeCall) {
	n.exec([]*nodeCall{c}, n.ownDeadline(c))
	b := &n.batch
	b.mu.Lock()
	wake := len(b.queue) > 0
	b.owner = ownerNone
	if wake {
		b.owner = ownerSender
	}
	b.mu.Unlock()
	if wake {
		b.wakeSender()
	}
}

// send is the node's sender: it takes the queued calls in batches and
// sends each batch as one pipeline, until the node is closed.
func (n *redisNode) send() {
	b := &n.batch
	defer b.wg.Done()
	batch := make([]*nodeCall, 0, maxBatch)
	for {
		select {
		case <-b.wake:
		case <-b.stop:
			n.drain()
			return
		}
		for {
			b.mu.Lock()
			k := min(len(b.queue), maxBatch)
			if k == 0 {
				if b.owner == ownerSender {
					b.owner = ownerNone
				}
				b.mu.Unlock()
				break
			}
			batch = append(batch[:0], b.queue[:k]...)
			rest := copy(b.queue, b.queue[k:])
			clear(b.queue[rest:])
			b.queue = b.queue[:rest]
			b.mu.Unlock()
			n.exec(batch, time.Time{})
			clear(batch)
		}
	}
}

// drain answers the calls still queued when the node closes.
func (n *redisNode) drain() {
	b := &n.batch
	b.mu.Lock()
	q := b.queue
	b.queue = nil
	b.mu.Unlock()
	for _, c := range q {
		if c.state.CompareAndSwap(callQueued, callDropped) {
			c.finish(driver.Result{}, redis.ErrClosed)
		}
	}
}

// exec writes the calls of batch that are still wanted as one pipeline and
// answers each. A call not sent is answered ErrBusy: its caller gave up,
// or too little of its deadline is left for the node to answer (less than
// the node's recent round trip, capped at half the op timeout so that a
// fresh call always goes out and the estimate cannot lock the node out).
// Calls refused for a missing script are sent again with the script's
// source (EVAL); calls redirected by a cluster endpoint switch the node to
// its cluster client and are sent again there. Neither was executed.
//
// The pipeline's socket deadline is until for a lone caller's call
// (sendOwn, ownDeadline: a node frozen since its last answer costs its
// caller one op timeout), or, for the sender's batches of many rounds' calls,
// maxWaitFactor × the op timeout from now: on a loaded host a pipeline
// answered in time is read late, and a socket deadline of one op timeout
// closed the connection under hundreds of calls that had been answered.
func (n *redisNode) exec(batch []*nodeCall, until time.Time) {
	b := &n.batch
	need := time.Duration(min(b.rtt.Load(), int64(n.opTimeout/2)))
	now := time.Now()
	live, release := batch[:0], false
	for _, c := range batch {
		isRelease := c.op.Kind() == driver.OpRelease
		if !isRelease && !c.inTime(now, need) {
			if c.state.CompareAndSwap(callQueued, callDropped) {
				over := c.over(now)
				if over == nil {
					over = context.DeadlineExceeded // too close to it
				}
				c.finish(driver.Result{}, b.notSent(over))
			}
			continue
		}
		if c.state.CompareAndSwap(callQueued, callSent) {
			live = append(live, c)
			release = release || isRelease
		}
	}
	if len(live) == 0 {
		return
	}
	t0 := monoNow()
	b.sentAt.Store(t0)
	ctx := n.socketDeadline(until, now, release)
	again, fault := n.pipe(ctx, live, false)
	resent := len(again) > 0
	if resent {
		again, fault = n.pipe(ctx, again, true)
	}
	if len(again) > 0 && !n.cluster.Load() {
		n.switchToCluster()
		_, fault = n.pipe(ctx, again, true)
	}
	d := monoNow() - t0
	b.sentAt.Store(0)
	stalled := int64(0)
	if isTimeout(fault) {
		stalled = d // the calls queued behind it waited for the node
	}
	b.stalled.Store(stalled)
	if !resent && (fault == nil || isTimeout(fault)) {
		// Pipelines sent once: a script loaded or a switch to a cluster
		// client is not the node's answer time. One that timed out counts
		// as answered at its deadline, so that a host on which answers
		// come later than the wait stretches it.
		b.sampleRTT(d)
	}
	if w := b.watch.Load(); w != nil && fault != nil && !errors.Is(fault, redis.ErrClosed) {
		(*w)(fault)
	}
}

// pipe sends calls in one pipeline (scripts as EVAL when eval is set),
// the calls of one script folded into one call (redisfold.go), and
// answers them, except those it returns: refused unexecuted for a missing
// script (when !eval) or redirected to another cluster node (when the node
// is not yet a cluster client), for the caller to send again. fault is
// the pipeline's failure as a whole (no answer, a broken or refused
// connection), nil when the node answered.
func (n *redisNode) pipe(ctx context.Context, calls []*nodeCall, eval bool) (again []*nodeCall, fault error) {
	box := n.client.Load()
	p := box.pipeline()
	defer box.pipes.Put(p)
	var one [1]unit
	units := n.plan(calls, &one)
	for i := range units {
		units[i].queue(ctx, p, eval)
	}
	cmds, execErr := p.Exec(ctx)
	fault = pipeFault(execErr)
	// Exec's error is the first command's error, or, when no command
	// carries one, the connection's (a refused AUTH is not stamped on the
	// commands): then none of them ran.
	for _, cmd := range cmds {
		if cmd.Err() != nil {
			execErr = nil
			break
		}
	}
	for i := range units {
		v, err := cmdReply(units[i].cmd)
		if execErr != nil {
			v, err = nil, execErr
		}
		again = n.answer(&units[i], v, err, eval, again)
	}
	return again, fault
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
