package redlock

import (
	"context"
	"time"
)

// The deadlines of a node's sends: how long a pipeline may take before
// its socket gives up, from what the node's answers lately took.

// sampleRTT adds a pipeline's round trip d (ns) to the node's estimate:
// TCP's estimator (RFC 6298), gains 1/8 and 1/4.
func (b *batcher) sampleRTT(d int64) {
	old, dev := b.rtt.Load(), b.rttDev.Load()
	b.rttDev.Store(dev + (abs(d-old)-dev)/4)
	b.rtt.Store(old + (d-old)/8)
}

// ownDeadline is the socket deadline of a lone caller's call c, sent on
// its own goroutine (sendOwn), which waits for it: c's round's deadline,
// but no later than the node's answers lately took — their round trip
// plus four mean deviations (TCP's retransmission timeout, RFC 6298) —
// or the op timeout, if longer. A node frozen since it last answered
// costs the caller one op timeout, not the round's wait for a majority;
// on a loaded host, where answers are read late, the wait stretches with
// them.
func (n *redisNode) ownDeadline(c *nodeCall) time.Time {
	b := &n.batch
	wait := max(time.Duration(b.rtt.Load()+4*b.rttDev.Load()), n.opTimeout)
	at := time.Now().Add(wait)
	if !c.until.IsZero() && c.until.Before(at) {
		return c.until
	}
	return at
}

// releaseWait is how long, in op timeouts, the sender waits for a
// pipeline that carries a release (an end, or an undo). A timed-out
// pipeline's connection is closed, and a new one answers a handshake
// (go-redis sends HELLO) before anything is written on it: on a link
// slower than maxWaitFactor op timeouts a round trip, no new connection
// would ever come up, and the undo of an acquisition written on the old
// one, which the node runs late, would never follow it — a claim left on
// a majority, taken for a run that may have started once its lease
// expires. The callers do not wait for it (their rounds end at their own
// deadlines): only the node's sender does, and the calls queued behind it
// that turn late are not sent.
const releaseWait = 10

// socketDeadline is the deadline of a pipeline (and of its retries: a
// script loaded, a cluster endpoint's redirections) sent until until, or,
// when until is zero (the sender's), maxWaitFactor × the op timeout from
// now (exec's clock reading, taken once per pipeline) — releaseWait × for
// a pipeline that carries a release.
func (n *redisNode) socketDeadline(until, now time.Time, release bool) context.Context {
	switch {
	case !until.IsZero():
	case release:
		until = now.Add(releaseWait * n.opTimeout)
	default:
		until = now.Add(maxWaitFactor * n.opTimeout)
	}
	return socketDeadline{Context: context.Background(), at: until}
}

// socketDeadline carries a pipeline's deadline to go-redis, which sets
// its connection's read and write deadlines from the context's Deadline
// (ContextTimeoutEnabled) and otherwise treats it as Background: no
// timer and no cancellation of its own, which a pipeline does not need —
// the socket's deadline ends it.
type socketDeadline struct {
	context.Context
	at time.Time
}

func (c socketDeadline) Deadline() (time.Time, bool) { return c.at, true }

func abs(d int64) int64 {
	if d < 0 {
		return -d
	}
	return d
}
