package redlock

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotlock/slotlock/locking/driver"
)

// The states of a nodeCall: queued until the sender writes it (sent) or
// it is given up unsent (dropped), by its caller or by the sender.
const (
	callQueued uint32 = iota
	callSent
	callDropped
)

// nodeCall is one queued request and, once done has signalled, its answer.
type nodeCall struct {
	ctx   context.Context
	until time.Time // the round's deadline (zero: ctx's own alone)
	op    driver.Op
	b     *batcher
	res   driver.Result
	err   error
	state atomic.Uint32
	done  chan struct{}
	// The call's script and EVALSHA arguments (nil for a command), built
	// once for its pipeline and any resend.
	script *luaScript
	args   []any
}

// finish answers the call; whoever finishes it touches it no more (its
// waiter may recycle it at once).
func (c *nodeCall) finish(res driver.Result, err error) {
	c.res, c.err = res, err
	c.done <- struct{}{} // capacity 1, one answer per call
}

// callPool recycles the calls whose waiter took their answer (a call given
// up may still be answered later: it is left to the collector), sparing
// a call and its channel per node and round.
var callPool = sync.Pool{New: func() any { return &nodeCall{done: make(chan struct{}, 1)} }}

// wait returns the call's answer. When its caller stops waiting first
// (ctx ends, or expire fires at the round's deadline): ErrBusy if the
// call was never written (and now never will be), else an
// *unansweredError.
func (c *nodeCall) wait(expire <-chan time.Time) (driver.Result, error) {
	select {
	case <-c.done:
		res, err := c.res, c.err
		*c = nodeCall{done: c.done}
		callPool.Put(c)
		return res, err
	case <-c.ctx.Done():
	case <-expire:
	}
	over := c.over(time.Now())
	if over == nil {
		over = context.DeadlineExceeded // expire fired
	}
	if c.op.Kind() != driver.OpRelease {
		c.state.CompareAndSwap(callQueued, callDropped)
	}
	if c.state.Load() == callDropped {
		return driver.Result{}, c.b.notSent(over)
	}
	select {
	case <-c.done:
		return c.res, c.err
	default:
	}
	return driver.Result{}, &unansweredError{err: over}
}

// over is why the call's caller no longer waits at now (its context's
// error, or DeadlineExceeded past the round's deadline), nil while it
// still does.
func (c *nodeCall) over(now time.Time) error {
	if err := c.ctx.Err(); err != nil {
		return err
	}
	if !c.until.IsZero() && !now.Before(c.until) {
		return context.DeadlineExceeded
	}
	return nil
}

// inTime reports whether the caller still waits at least need after now.
func (c *nodeCall) inTime(now time.Time, need time.Duration) bool {
	if c.over(now) != nil {
		return false
	}
	dl, ok := c.ctx.Deadline()
	if !c.until.IsZero() && (!ok || c.until.Before(dl)) {
		dl, ok = c.until, true
	}
	return !ok || dl.Sub(now) >= need
}

// wireCall is an op and, for a script, its script and call arguments
// (scriptCall), built once for every node a round sends the op to: the
// argument list is read-only once built (a resend as EVAL copies it), so
// the nodes' pipelines share it, and a round of n nodes boxes its
// arguments once, not n times. A zero script and nil args leave them to
// the pipeline (plan).
type wireCall struct {
	op     driver.Op
	script *luaScript
	args   []any
}

// wireOf is o's wire form.
func wireOf(o driver.Op) wireCall {
	s, a := scriptCall(o, false)
	return wireCall{op: o, script: s, args: a}
}

// sameOp reports whether a and b are the same script op (equal fields),
// so that their calls may share one argument list. Ops of other kinds
// are never the same: the lease ops are the ones a round repeats.
func sameOp(a, b driver.Op) bool {
	switch a := a.(type) {
	case driver.AcquireOp:
		b, ok := b.(driver.AcquireOp)
		return ok && a == b
	case driver.ReleaseOp:
		b, ok := b.(driver.ReleaseOp)
		return ok && a == b
	case driver.ExtendOp:
		b, ok := b.(driver.ExtendOp)
		return ok && a == b
	case driver.LogAddOp:
		b, ok := b.(driver.LogAddOp)
		return ok && a == b
	}
	return false
}
