package redlock

import (
	"context"
	"errors"
	"net"
	"os"
	"time"

	"github.com/slotlock/slotlock/locking"

	"github.com/redis/go-redis/v9"
)

// How a Redis node's calls fail, told apart so that "redis node
// unreachable" means the node: a call this replica never sent (ErrBusy, or
// held behind the node's stalled pipeline), a call written whose caller
// stopped waiting (its pipeline reports the node), and a pipeline that
// failed as a whole (the node's fault, reported through watchFaults).

// notSent is the answer to a call that was never written, its caller
// no longer waiting for over: ErrBusy (this replica's own queue), or the
// caller's own cancellation, or, when the queue was held by a pipeline the
// node has left unanswered for over half the op timeout, the node's stall
// — the node's fault, which the failing pipeline reports (watch), not
// this replica's load. That pipeline may still be in flight (the caller
// gave up waiting), or may just have timed out: the sender finds the
// calls queued behind it past their deadlines as it takes them for the
// next one, and they too waited for the node.
func (b *batcher) notSent(over error) error {
	if !errors.Is(over, context.DeadlineExceeded) {
		return over
	}
	held := b.stalled.Load()
	if t := b.sentAt.Load(); t != 0 {
		held = monoNow() - t
	}
	if d := time.Duration(held); d > b.opTimeout/2 {
		return &stalledError{waited: d}
	}
	return locking.ErrBusy
}

// stalledError answers a call not sent because the node left the pipeline
// ahead of it unanswered. errors.Is(err, context.DeadlineExceeded) holds.
type stalledError struct{ waited time.Duration }

func (e *stalledError) Error() string {
	return "not sent: the node has left the pipeline ahead unanswered for " + e.waited.Round(time.Millisecond).String()
}

func (e *stalledError) Unwrap() error { return context.DeadlineExceeded }

// unansweredError answers a call that was written (or, a release, will
// be) when its caller stopped waiting: it may yet run on the node. Whether
// the node is at fault is for its pipeline to tell (watch), measured from
// its write, not from when the caller queued.
type unansweredError struct{ err error }

func (e *unansweredError) Error() string { return e.err.Error() + " (sent, not answered yet)" }

func (e *unansweredError) Unwrap() error { return e.err }

// unsent reports a call that was never written to its node: this
// replica's queue did not send it (ErrBusy), or it was held behind a
// pipeline the node left unanswered (stalledError). The node holds
// nothing of it, and nothing is to be undone there.
func unsent(err error) bool {
	var se *stalledError
	return errors.Is(err, locking.ErrBusy) || errors.As(err, &se)
}

// queueHeld reports an error that says nothing of the node by itself: a
// call this replica did not send, or stopped waiting for (its pipeline's
// outcome is reported apart, by watch).
func queueHeld(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, locking.ErrBusy) {
		return true
	}
	var ue *unansweredError
	var se *stalledError
	return errors.As(err, &ue) || errors.As(err, &se)
}

// pipeFault is a pipeline's failure as a whole: Exec's error unless the
// node answered it (a reply error such as NOSCRIPT or MOVED).
func pipeFault(err error) error {
	if err == nil {
		return nil
	}
	var re redis.Error
	if errors.As(err, &re) {
		return nil
	}
	return err
}

// watchFaults makes f hear each pipeline the node failed as a whole (no
// answer, a broken or refused connection: redlock's observe). An answered
// pipeline is not reported: whether the node is back is for its calls'
// answers to tell (observe), since one that refuses writes answers too.
func (n *redisNode) watchFaults(f func(error)) { n.batch.watch.Store(&f) }

// isTimeout reports whether err is a deadline that passed on the socket.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}
