package redlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking/redistest"
)

// loggedRedlock is a Redlock over addrs whose log goes to the returned
// buffer.
func loggedRedlock(t *testing.T, addrs []string) (locking.Locker, *syncBuf) {
	t.Helper()
	var buf syncBuf
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	l, err := newLocker(Config{Nodes: addrs, OpTimeout: testOpTimeout, KeyPrefix: "t"}, locking.Options{Replica: "me", Logger: logger})
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l, &buf
}

// holdSender makes node busy as a replica's own sender is under load:
// calls queue behind a pipeline of this goroutine's that is not sent
// until the returned func runs.
func holdSender(t testing.TB, n *redisNode) func() {
	t.Helper()
	require.Eventually(t, n.claim, time.Second, time.Millisecond, "node idle")
	return func() { n.sendOwn(n.call(context.Background(), time.Time{}, wireCall{op: driver.PingOp{}})) }
}

// Calls that wait in the replica's own queue past their round's deadline
// are ErrBusy, not a node fault: nothing is logged, no node is marked down,
// nothing was sent (no undo either), and an acquisition that missed its
// majority for it says so.
func TestQueueOverloadIsBusyNotUnreachable(t *testing.T) {
	c := redistest.Start(t, 3)
	l, buf := loggedRedlock(t, c.Addrs())
	r := driverOf(l)
	ctx := tctx(t, 10*time.Second)

	// One node's queue held: the acquisition wins on the other two.
	free := holdSender(t, r.nodes[0].(*redisNode))
	lease, err := l.Acquire(ctx, locking.Key{Family: "busy", Name: "a"}, 5*time.Second)
	require.NoError(t, err)
	require.NoError(t, lease.End(ctx, locking.Ending{}).Err)
	free()

	// Two held: no majority, because of this replica's queue alone.
	free0 := holdSender(t, r.nodes[0].(*redisNode))
	free1 := holdSender(t, r.nodes[1].(*redisNode))
	_, err = l.Acquire(ctx, locking.Key{Family: "held", Name: "b"}, 5*time.Second)
	require.ErrorIs(t, err, locking.ErrBusy)
	require.ErrorIs(t, err, locking.ErrNoQuorum)
	_, err = l.Claim(ctx, locking.Key{Family: "held", Name: "c"}, 5*time.Second)
	require.ErrorIs(t, err, locking.ErrBusy)
	free0()
	free1()

	require.NotContains(t, buf.String(), "redis node unreachable")
	for i := range r.nodes {
		require.False(t, r.down[i].Load(), "node %d taken for down", i)
	}
	// Nothing reached the held nodes: neither the acquisitions nor undos
	// (a tombstone) of them.
	for i := range 2 {
		cl := c.Node(i).Client()
		require.Eventually(t, r.nodes[i].(*redisNode).idle, time.Second, time.Millisecond)
		keys, err := cl.Keys(ctx, "t:{held}:*").Result()
		require.NoError(t, err)
		require.Empty(t, keys, "node %d", i)
	}
}

// A real flood: far more calls than the node's sender can send before
// their deadlines. Those that expire in the queue (or are too close to
// their deadline to be answered) are ErrBusy, every other call is
// answered, and the node is never reported down.
func TestQueueFloodIsBusy(t *testing.T) {
	c := redistest.Start(t, 1)
	n := newRedisNode(c.Addrs()[0], "127.0.0.1", Config{OpTimeout: time.Second, DialTimeout: time.Second}.withDefaults())
	defer n.Close()
	var faults atomic.Int32
	n.watchFaults(func(err error) {
		if err != nil {
			faults.Add(1)
		}
	})
	var busy, ok, other atomic.Int32
	var wg sync.WaitGroup
	for range 4000 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Millisecond)
			defer cancel()
			_, err := n.Do(ctx, driver.FenceOp{Key: "flood:{f}:fence", N: 1})
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, locking.ErrBusy):
				busy.Add(1)
			case queueHeld(err):
				// written, its caller gone before the answer: not ErrBusy
			default:
				other.Add(1)
				t.Errorf("call: %v", err)
			}
		}()
	}
	wg.Wait()
	require.Positive(t, busy.Load(), "some calls expire in the queue (ok %d)", ok.Load())
	require.Zero(t, other.Load())
	require.Zero(t, faults.Load(), "the node answered every pipeline")
}

// A frozen node is still the node's fault: its pipeline, unanswered for an
// op timeout from its write, reports it.
func TestFrozenNodeIsUnreachable(t *testing.T) {
	c := redistest.Start(t, 3)
	l, buf := loggedRedlock(t, c.Addrs())
	ctx := tctx(t, 10*time.Second)
	frozen := c.Node(1)
	require.NoError(t, frozen.Pause())
	defer func() { _ = frozen.Resume() }()
	lease, err := l.Acquire(ctx, locking.Key{Family: "frozen", Name: "a"}, 5*time.Second)
	require.NoError(t, err, "the other two are a majority")
	require.NoError(t, lease.End(ctx, locking.Ending{}).Err)
	require.Eventually(t, func() bool {
		s := buf.String()
		return strings.Contains(s, "redis node unreachable") && strings.Contains(s, frozen.Addr())
	}, 5*time.Second, 10*time.Millisecond, "log:\n%s", buf.String())
}

// A node whose writes are paused (CLIENT PAUSE WRITE: a failover, a
// managed service's maintenance) answers PING, GET and HKEYS at once
// while it holds every claim. It is logged unreachable once, and
// reachable again once its writes go through, not after every read it
// answers in between (which logged the pair every slot).
func TestWritePausedNodeIsUnreachableOnce(t *testing.T) {
	c := redistest.Start(t, 3)
	l, buf := loggedRedlock(t, c.Addrs())
	ctx := tctx(t, 10*time.Second)
	paused := c.Node(1)
	count := func(s string) int { return strings.Count(buf.String(), s) }
	const pause = time.Second
	require.NoError(t, paused.PauseWrites(pause))
	end := time.Now().Add(pause)
	for i := 0; time.Until(end) > 3*testOpTimeout; i++ {
		lease, err := l.Acquire(ctx, locking.Key{Family: "wpause", Name: fmt.Sprint(i)}, 5*time.Second)
		require.NoError(t, err, "the other two are a majority")
		_, err = l.Ping(ctx) // answered by the paused node too
		require.NoError(t, err)
		require.NoError(t, lease.End(ctx, locking.Ending{}).Err)
	}
	require.Equal(t, 1, count("redis node unreachable"), "log:\n%s", buf.String())
	require.Zero(t, count("reachable again"), "a node whose writes are held is not back; log:\n%s", buf.String())
	time.Sleep(time.Until(end))
	require.Eventually(t, func() bool {
		lease, err := l.Acquire(ctx, locking.Key{Family: "wpause", Name: "after"}, 5*time.Second)
		if err == nil {
			lease.End(ctx, locking.Ending{})
		}
		return count("reachable again") == 1
	}, 5*time.Second, 50*time.Millisecond, "log:\n%s", buf.String())
	require.Equal(t, 1, count("redis node unreachable"), "log:\n%s", buf.String())
}

// A node whose memory is full (maxmemory reached, noeviction) refuses
// every write with an OOM error reply while it answers reads, and runs a
// script's read-only path to its end: a claim of a key it holds is
// refused there without a write. Neither the pipeline's answer nor that
// refusal shows the node takes writes: it is logged unreachable once,
// not after each of them (which logged the pair every slot).
func TestFullNodeIsUnreachableOnce(t *testing.T) {
	c := redistest.Start(t, 3)
	l, buf := loggedRedlock(t, c.Addrs())
	ctx := tctx(t, 10*time.Second)
	count := func(s string) int { return strings.Count(buf.String(), s) }
	heldKey := locking.Key{Family: "full", Name: "held"}
	held, err := l.Acquire(ctx, heldKey, 10*time.Second)
	require.NoError(t, err)
	full := c.Node(1).Client()
	require.NoError(t, full.ConfigSet(ctx, "maxmemory", "1").Err())
	for i := range 5 {
		// A full node renews (PEXPIRE) and deletes: it frees memory, and
		// says nothing of whether the node takes a claim.
		require.NoError(t, held.Extend(ctx))
		lease, err := l.Acquire(ctx, locking.Key{Family: "full", Name: fmt.Sprint(i)}, 5*time.Second)
		require.NoError(t, err, "the other two are a majority")
		require.NoError(t, lease.End(ctx, locking.Ending{}).Err)
		_, err = l.Acquire(ctx, heldKey, 5*time.Second)
		require.ErrorIs(t, err, locking.ErrNotAcquired, "held on every node: refused, the full one by a read")
	}
	require.Equal(t, 1, count("redis node unreachable"), "log:\n%s", buf.String())
	require.Contains(t, buf.String(), "OOM", "the warning says why")
	require.Zero(t, count("reachable again"), "a node that refuses writes is not back; log:\n%s", buf.String())
	require.NoError(t, full.ConfigSet(ctx, "maxmemory", "0").Err())
	lease, err := l.Acquire(ctx, locking.Key{Family: "full", Name: "after"}, 5*time.Second)
	require.NoError(t, err)
	require.NoError(t, lease.End(ctx, locking.Ending{}).Err)
	require.Equal(t, 1, count("reachable again"), "log:\n%s", buf.String())
}

// idle reports a node with nothing queued and nobody sending.
func (n *redisNode) idle() bool {
	n.batch.mu.Lock()
	defer n.batch.mu.Unlock()
	return n.batch.owner == ownerNone && len(n.batch.queue) == 0
}

// A call left less time than the node's recent round trip is not sent:
// ErrBusy at once, the node untouched. A call with time enough is sent.
func TestDeadlineAwareSending(t *testing.T) {
	c := redistest.Start(t, 1)
	n := newRedisNode(c.Addrs()[0], "127.0.0.1", Config{}.withDefaults())
	defer n.Close()
	n.batch.rtt.Store(int64(40 * time.Millisecond)) // a slow node, lately
	short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := n.Do(short, driver.FenceOp{Key: "aware:{a}:fence", N: 7})
	require.ErrorIs(t, err, locking.ErrBusy)
	require.Less(t, time.Since(start), 20*time.Millisecond, "answered at once, not at the deadline")
	require.Zero(t, c.Node(0).Client().Exists(context.Background(), "aware:{a}:fence").Val(), "not sent")

	res, err := n.Do(tctx(t, time.Second), driver.FenceOp{Key: "aware:{a}:fence", N: 7})
	require.NoError(t, err)
	require.EqualValues(t, 7, res.N)
}

// Calls held in the queue behind a frozen node's pipeline are the node's
// fault, not this replica's load: with two nodes of three frozen, callers
// that keep asking (each round queues behind the pipeline the node leaves
// unanswered) get no majority, never ErrBusy — which a scheduler takes for
// its own overload and reports as a late slot, not an outage.
func TestCallsHeldBehindAFrozenNodeAreNotBusy(t *testing.T) {
	c := redistest.Start(t, 3)
	l, _ := loggedRedlock(t, c.Addrs())
	ctx := tctx(t, 10*time.Second)
	for _, i := range []int{1, 2} {
		require.NoError(t, c.Node(i).Pause())
		defer func() { _ = c.Node(i).Resume() }()
	}
	end := time.Now().Add(10 * maxWaitFactor * testOpTimeout)
	var wg sync.WaitGroup
	var calls, busy atomic.Int32
	for g := range 4 {
		wg.Go(func() {
			for i := 0; time.Now().Before(end); i++ {
				_, err := l.Acquire(ctx, locking.Key{Family: "frozen", Name: fmt.Sprint(g, "-", i)}, 5*time.Second)
				calls.Add(1)
				if !errors.Is(err, locking.ErrNoQuorum) {
					t.Errorf("acquire with two of three nodes frozen: %v", err)
				}
				if errors.Is(err, locking.ErrBusy) {
					busy.Add(1)
					t.Logf("busy: %v", err)
				}
				time.Sleep(time.Duration(g*7) * time.Millisecond)
			}
		})
	}
	wg.Wait()
	require.Zero(t, busy.Load(), "of %d calls", calls.Load())
}
