package redlock

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
)

// nodeSet is the nodes of one Redlock driver and how a round reaches
// them: every op goes to each node in parallel under one deadline, and a
// majority (quorum) of answers decides. The lease steps (redlock) and the
// fleet's state (store) both run their rounds here; the background sends
// (an undo sent again, a pause repaired) are tied to it so that Close
// waits for them.
type nodeSet struct {
	nodes     []driver.Node
	down      []atomic.Bool  // per node: last seen unreachable
	downAt    []atomic.Int64 // per node: when a failure was last seen (monoNow)
	quorum    int
	prefix    string
	families  *familyCache // keys.go
	opTimeout time.Duration
	log       *slog.Logger
	clock     locking.Clock

	// bg and quit: work sent in the background (undoLater, repairPause);
	// quit stops it at close, which waits for it.
	bg   sync.WaitGroup
	quit chan struct{}
}

// observe logs a node's transitions between reachable and unreachable,
// once each way. Errors caused by the caller's own context, or by this
// replica's own queue (ErrBusy), are not the node's fault and are
// ignored. A node is back only when an answer shows it took a write
// (tookWrite). A queuing node also reports each pipeline's failure
// (watchFaults, to observeFailure), timed from its write. sent is when
// the call's round began (monoNow): an answer to a call sent before the
// node's last failure was seen does not show it back — a round waits
// for late answers, and a write the node took before its memory filled
// up was answered after a refusal that came later.
func (r *nodeSet) observe(parent context.Context, i int, op driver.OpKind, res driver.Result, err error, sent int64) {
	if err != nil {
		r.observeFailure(parent, i, err)
		return
	}
	if tookWrite(op, res) && r.down[i].Load() && sent > r.downAt[i].Load() && r.down[i].Swap(false) {
		r.log.Info("locking: redis node reachable again", "node", r.nodes[i].Addr())
	}
}

// observeFailure is observe's half for a call or pipeline that failed.
func (r *nodeSet) observeFailure(parent context.Context, i int, err error) {
	// ErrBusy is this replica's load: the call was not sent.
	if parent.Err() != nil || isReadError(err) || errors.Is(err, locking.ErrBusy) {
		return
	}
	r.downAt[i].Store(monoNow()) // before down: observe reads them the other way round
	if !r.down[i].Swap(true) {
		r.log.Warn("locking: redis node unreachable", "node", r.nodes[i].Addr(), "error", err.Error())
	}
}

// tookWrite reports whether an answer to an op of kind k shows that the
// node takes writes: a script call that stored something (Status > 0: a
// lease set, a counter raised, an entry added). A node that holds or
// refuses writes still answers the rest at once — PING, GET, HKEYS, and
// a script's read-only path (a claim refused by a done marker reads and
// writes nothing) — under CLIENT PAUSE WRITE (a failover, a managed
// service's maintenance); under maxmemory with noeviction it refuses
// every write that needs memory (OOM) and still takes a renewal
// (PEXPIRE) and a release (DEL), which free it. Counting those answers
// logged such a node unreachable and reachable again every slot, while
// no claim went through, and put it back first in Handled's read order.
func tookWrite(k driver.OpKind, res driver.Result) bool {
	switch k {
	case driver.OpGet, driver.OpClaims, driver.OpPing, driver.OpLog, driver.OpDone, driver.OpTime,
		driver.OpExtend, driver.OpRelease:
		return false
	}
	return res.Status > 0
}

// round applies one op per node, in parallel, under one OpTimeout
// deadline, and waits for every answer. op(i) gives node i's op; ok is
// false for a node to leave out. Answers go to res and errs, indexed by
// node; node errors are observed. Nodes that queue their calls (Redis
// nodes: redisbatch.go) get them all queued before the first answer is
// awaited, without a goroutine each, and the first of them found idle is
// sent on the calling goroutine (no hop to its sender); others are called
// on goroutines of their own (the first on the calling goroutine).
func (r *nodeSet) round(ctx context.Context, op func(i int) (driver.Op, bool), res []driver.Result, errs []error) {
	// The deadlines are real time, as the sockets' are. A round waits
	// for every answer until all (the op timeout), and for a majority of
	// answers from nodes that queue (Redis) until until, maxWaitFactor ×
	// the op timeout: a dead node costs it the first; a loaded host, on
	// which every answer is read late, up to the second. A fixed op
	// timeout turned answers that had come into failures there, which
	// were retried and loaded the host more: nine replicas and three
	// Redis nodes on 2 cores ran 82 % of 1,000 every-second jobs with
	// thousands of failed ends a second, or collapsed to none. Queued
	// calls carry until and share one pooled timer; a context of its own,
	// to all, is made only for nodes called through Do.
	now, sent := time.Now(), monoNow()
	all, until := now.Add(r.opTimeout), now.Add(maxWaitFactor*r.opTimeout)
	var calls [maxQueuedNodes]*nodeCall
	var direct *directCalls // made for the first node called through Do
	own := -1
	var w wireCall // the last queued op's wire form, shared by the nodes sent the same op
	for i := range r.nodes {
		o, ok := op(i)
		if !ok {
			continue
		}
		if q, isQ := r.nodes[i].(queuingNode); isQ && i < maxQueuedNodes && !isRead(o) {
			if w.op == nil || !sameOp(w.op, o) {
				g := w.group
				if g == nil {
					g = newRoundDone(r.quorum)
				}
				w = wireOf(o)
				w.group = g
			}
			if own < 0 && q.claim() {
				own, calls[i] = i, q.call(ctx, until, w)
				continue
			}
			calls[i] = q.start(ctx, until, w)
			continue
		}
		if direct == nil {
			direct = newDirectCalls(ctx, all, i, o, sent)
			continue
		}
		direct.wg.Add(1)
		go direct.do(r, ctx, i, o, res, errs)
	}
	if own >= 0 {
		r.nodes[own].(queuingNode).sendOwn(calls[own])
	}
	if direct != nil {
		res[direct.first], errs[direct.first] = r.nodes[direct.first].Do(direct.ctx, direct.firstOp)
		r.observe(ctx, direct.first, direct.firstOp.Kind(), res[direct.first], errs[direct.first], sent)
	}
	if w.group != nil {
		r.awaitQueued(ctx, all, until, sent, w.group, calls[:min(len(r.nodes), maxQueuedNodes)], res, errs)
	}
	if direct != nil {
		direct.wg.Wait()
		direct.cancel()
	}
}

// directCalls are a round's calls through Do (nodes that do not queue):
// each on a goroutine of its own, the first on the round's, under a
// context of the round's deadline. Made only when the round has one, so
// that a round of queuing nodes allocates none of it.
type directCalls struct {
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	first   int
	firstOp driver.Op
	sent    int64 // the round's start (monoNow)
}

func newDirectCalls(parent context.Context, until time.Time, first int, o driver.Op, sent int64) *directCalls {
	d := &directCalls{first: first, firstOp: o, sent: sent}
	d.ctx, d.cancel = context.WithDeadline(parent, until)
	return d
}

// do calls node i (observed against parent, the round's context).
func (d *directCalls) do(r *nodeSet, parent context.Context, i int, o driver.Op, res []driver.Result, errs []error) {
	defer d.wg.Done()
	res[i], errs[i] = r.nodes[i].Do(d.ctx, o)
	r.observe(parent, i, o.Kind(), res[i], errs[i], d.sent)
}

// awaitQueued waits for the queued calls' answers (their one completion,
// g) until all, and while they are short of a majority until until, and
// observes what they say of their nodes.
func (r *nodeSet) awaitQueued(ctx context.Context, all, until time.Time, sent int64, g *roundDone, calls []*nodeCall, res []driver.Result, errs []error) {
	g.release() // the round's own count: every call is queued
	// everyone: every call answered and ch's signal taken.
	everyone := waitFor(ctx, g.ch, all)
	if !everyone && ctx.Err() == nil && g.short.Load() > 0 && queued(calls) >= r.quorum {
		// No majority yet: its answers may come late, not never. (A
		// round sent to fewer nodes — an undo where a claim was written —
		// has none to wait for.)
		if waitFor(ctx, g.majority, until) && g.left.Load() == 0 {
			<-g.ch // sent by the answer that made left 0, if not yet
			everyone = true
		}
	}
	for i, c := range calls {
		if c == nil {
			continue
		}
		kind := c.op.Kind() // before take recycles c
		res[i], errs[i] = c.take()
		if !queueHeld(errs[i]) {
			r.observe(ctx, i, kind, res[i], errs[i], sent)
		}
	}
	if everyone {
		// Every call answered and the signal taken: nothing touches g
		// any more.
		roundPool.Put(g)
	}
}

// queued is how many of calls a round queued.
func queued(calls []*nodeCall) (k int) {
	for _, c := range calls {
		if c != nil {
			k++
		}
	}
	return k
}

// waitFor waits until ch signals (true), ctx ends or the deadline passes.
func waitFor(ctx context.Context, ch <-chan struct{}, deadline time.Time) bool {
	select {
	case <-ch:
		return true
	default:
	}
	timer := getTimer(time.Until(deadline))
	defer putTimer(timer)
	select {
	case <-ch:
		return true
	case <-ctx.Done():
	case <-timer.C:
	}
	return false
}

// nodeErrs turns per-node errors into one errors.Join of *NodeError.
func (r *nodeSet) nodeErrs(errs []error) error {
	var out []error
	for i, err := range errs {
		if err != nil {
			out = append(out, &locking.NodeError{Addr: r.nodes[i].Addr(), Err: err})
		}
	}
	return errors.Join(out...)
}

func (r *nodeSet) answered(errs []error) int {
	n := 0
	for _, err := range errs {
		if err == nil {
			n++
		}
	}
	return n
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

// queuingNode is a Node that queues a call and answers it later
// (redisNode), so that a round needs no goroutine per node. claim makes
// the caller the node's sender when it is idle: the caller then sends its
// own call (sendOwn) instead of queuing it (start).
type queuingNode interface {
	start(ctx context.Context, until time.Time, w wireCall) *nodeCall
	claim() bool
	call(ctx context.Context, until time.Time, w wireCall) *nodeCall
	sendOwn(c *nodeCall)
	watchFaults(f func(error))
}

// maxWaitFactor bounds how long a round waits for a majority of answers,
// and a pipeline for its answers, in op timeouts (round). lock.ttl must
// exceed 3 × op_timeout (the config refuses less), so a claim that took
// the whole wait still leaves its lease a validity to check.
const maxWaitFactor = 3

// maxQueuedNodes bounds the nodes whose calls a round queues at once (a
// fixed array, kept on the stack); further nodes are called on goroutines.
const maxQueuedNodes = 16

// all is a round's op selector for the same op on every node.
func all(o driver.Op) func(int) (driver.Op, bool) {
	return func(int) (driver.Op, bool) { return o, true }
}
