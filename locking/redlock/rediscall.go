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

// nodeCall is one queued request and, once done has signalled (or, for
// a call of a round, answered is set), its answer.
type nodeCall struct {
	ctx   context.Context
	until time.Time // the round's deadline (zero: ctx's own alone)
	op    driver.Op
	b     *batcher
	res   driver.Result
	err   error
	state atomic.Uint32
	done  chan struct{}
	// A round's calls signal its one completion (group) instead of
	// done: the round waits once for all its nodes, not once per node.
	group    *roundDone
	answered atomic.Bool
	// The call's script and EVALSHA arguments (nil for a command), built
	// once for its pipeline and any resend.
	script *luaScript
	args   []any
}

// finish answers the call; whoever finishes it touches it no more (its
// waiter may recycle it at once).
func (c *nodeCall) finish(res driver.Result, err error) {
	c.res, c.err = res, err
	if g := c.group; g != nil {
		c.answered.Store(true)
		g.answer(err == nil)
		return
	}
	c.done <- struct{}{} // capacity 1, one answer per call
}

// callPool recycles the calls whose waiter took their answer (a call given
// up may still be answered later: it is left to the collector), sparing
// a call and its channel per node and round.
var callPool = sync.Pool{New: func() any { return &nodeCall{done: make(chan struct{}, 1)} }}

// wait returns the answer of a call of Do. When its caller stops waiting
// first (ctx ends): ErrBusy if the call was never written (and now never
// will be), else an *unansweredError (givenUp).
func (c *nodeCall) wait() (driver.Result, error) {
	select {
	case <-c.done:
		res, err := c.res, c.err
		*c = nodeCall{done: c.done}
		callPool.Put(c)
		return res, err
	case <-c.ctx.Done():
	}
	return c.givenUp(func() bool {
		select {
		case <-c.done:
			return true
		default:
			return false
		}
	})
}

// givenUp is the answer of a call its caller stopped waiting for:
// ErrBusy if it was never written (and now never will be), its answer if
// it came meanwhile (answered reports it), else an *unansweredError. The
// call is not recycled: its sender may still answer it.
func (c *nodeCall) givenUp(answered func() bool) (driver.Result, error) {
	over := c.over(time.Now())
	if over == nil {
		over = context.DeadlineExceeded // the round's deadline passed
	}
	if c.op.Kind() != driver.OpRelease {
		c.state.CompareAndSwap(callQueued, callDropped)
	}
	if c.state.Load() == callDropped {
		return driver.Result{}, c.b.notSent(over)
	}
	if answered() {
		return c.res, c.err
	}
	return driver.Result{}, &unansweredError{err: over}
}

// take is the answer of a call of a round, once the round stopped
// waiting: the call is recycled when it was answered, else given up.
func (c *nodeCall) take() (driver.Result, error) {
	if c.answered.Load() {
		res, err := c.res, c.err
		*c = nodeCall{done: c.done}
		callPool.Put(c)
		return res, err
	}
	return c.givenUp(c.answered.Load)
}

// roundDone is a round's one completion: left counts its calls not yet
// answered, plus one that the round holds while it queues them, and the
// answer that brings it to zero signals ch; short counts the answers (not
// errors) the round still needs for a majority, and the one that brings
// it to zero signals majority. Recycled by a round that saw every call
// answered (no answer can come to it after).
type roundDone struct {
	left, short  atomic.Int32
	ch, majority chan struct{} // capacity 1
}

var roundPool = sync.Pool{New: func() any {
	return &roundDone{ch: make(chan struct{}, 1), majority: make(chan struct{}, 1)}
}}

// newRoundDone is a completion held by its round (left 1) that needs
// quorum answers for a majority.
func newRoundDone(quorum int) *roundDone {
	g := roundPool.Get().(*roundDone)
	select {
	case <-g.majority: // a majority signal of its last round, not taken
	default:
	}
	g.left.Store(1)
	g.short.Store(int32(quorum))
	return g
}

// answer counts one call answered (ok: not an error); the last signals
// the round, as does the one that completes a majority.
func (g *roundDone) answer(ok bool) {
	if ok && g.short.Add(-1) == 0 {
		g.majority <- struct{}{}
	}
	g.release()
}

// release counts one call answered, or the round's own hold.
func (g *roundDone) release() {
	if g.left.Add(-1) == 0 {
		g.ch <- struct{}{}
	}
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
	group  *roundDone // the round's completion; nil for a call of Do
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
		return equalOp(a, b)
	case driver.ReleaseOp:
		return equalOp(a, b)
	case driver.ExtendOp:
		return equalOp(a, b)
	case driver.LogAddOp:
		return equalOp(a, b)
	}
	return false
}

// equalOp reports whether b is an op of a's type with a's fields.
func equalOp[T interface {
	driver.Op
	comparable
}](a T, b driver.Op) bool {
	o, ok := b.(T)
	return ok && a == o
}
