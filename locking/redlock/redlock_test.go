package redlock

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"

	"github.com/slotlock/slotlock/locking/redistest"
)

const testOpTimeout = 100 * time.Millisecond

// drivers maps each Locker that newLocker made to its Redlock driver.
var drivers sync.Map

// newLocker is New, remembering the driver for driverOf.
func newLocker(cfg Config, opt locking.Options) (locking.Locker, error) {
	l, r, err := newWithDriver(cfg, opt)
	if err != nil {
		return nil, err
	}
	drivers.Store(l, r)
	return l, nil
}

// driverOf is the Redlock driver under l, a Locker from newLocker.
func driverOf(l locking.Locker) *redlock {
	r, _ := drivers.Load(l)
	return r.(*redlock)
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newTestRedlock(t testing.TB, addrs []string, replica string, mod ...func(*Config)) locking.Locker {
	t.Helper()
	cfg := Config{Nodes: addrs, OpTimeout: testOpTimeout, KeyPrefix: "t"}
	for _, m := range mod {
		m(&cfg)
	}
	l, err := newLocker(cfg, locking.Options{Replica: replica, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func tctx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// rkey is the Redis key of k under the test prefix.
func rkey(k locking.Key) string { return "t:{" + k.Family + "}:" + k.Name }

// storedValue is the value l, just acquired, holds on c's first node
// ("<token>|<replica>": its Grant's ID starts the token).
func storedValue(t *testing.T, c *redistest.Cluster, k locking.Key, l *locking.Lease) string {
	t.Helper()
	v := c.Node(0).Client().Get(context.Background(), rkey(k)).Val()
	if g := l.Grant(); !strings.HasPrefix(v, g.ID) || !strings.HasSuffix(v, "|"+g.Holder) {
		t.Fatalf("node %s holds %q, not the lease %s of %s", c.Node(0).Addr(), v, g.ID, g.Holder)
	}
	return v
}

func TestRedlockAcquireReleaseAndHolder(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 10*time.Second)
	a := newTestRedlock(t, c.Addrs(), "replica-a")
	b := newTestRedlock(t, c.Addrs(), "replica-b")
	if got := a.Mode(); got != "redlock(3 nodes)" {
		t.Fatalf("Mode = %q", got)
	}
	key := locking.Key{Family: "job", Name: "slot:1"}
	la, err := a.Acquire(ctx, key, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// The value is "<32 hex>|<replica>" on every node, with a TTL.
	for _, n := range c.Nodes() {
		v, err := n.Client().Get(ctx, rkey(key)).Result()
		if err != nil || !strings.HasSuffix(v, "|replica-a") || len(v) != 32+len("|replica-a") {
			t.Fatalf("node %s: value %q, %v", n.Addr(), v, err)
		}
		if ttl := n.Client().PTTL(ctx, rkey(key)).Val(); ttl <= 0 || ttl > 5*time.Second {
			t.Fatalf("node %s: pttl %v", n.Addr(), ttl)
		}
		if f, _ := n.Client().Get(ctx, "t:{job}:fence").Uint64(); f != la.Token() {
			t.Fatalf("node %s: fence %d, token %d", n.Addr(), f, la.Token())
		}
	}
	_, err = b.Acquire(ctx, key, time.Second)
	var held *locking.HeldError
	if !errors.As(err, &held) || held.Holder != "replica-a" || held.Done || errors.Is(err, locking.ErrSplitVote) {
		t.Fatalf("b: %v", err)
	}
	if err := la.End(ctx, locking.Ending{}).Err; err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes() {
		if n.Client().Exists(ctx, rkey(key)).Val() != 0 {
			t.Fatalf("node %s still has the key after Release", n.Addr())
		}
	}
	lb, err := b.Acquire(ctx, key, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if lb.Token() <= la.Token() {
		t.Fatalf("token %d after %d", lb.Token(), la.Token())
	}
	if err := lb.End(ctx, locking.Ending{DoneTTL: 5 * time.Second, Note: "succeeded"}).Err; err != nil {
		t.Fatal(err)
	}
	_, err = a.Acquire(ctx, key, time.Second)
	if !errors.As(err, &held) || !held.Done || held.Holder != "replica-b" || held.Note != "succeeded" {
		t.Fatalf("acquire on done marker: %v", err)
	}
}

// 50 goroutines over 5 clients contend for one key: never two holders at
// once, and the tokens of successive holders strictly increase.
func TestRedlockContention(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 30*time.Second)
	lockers := make([]locking.Locker, 5)
	for i := range lockers {
		// A loaded 2-core machine under -race can stall a round past
		// 100ms; a lost round is retried, it is not what this test checks.
		lockers[i] = newTestRedlock(t, c.Addrs(), fmt.Sprintf("r%d", i), func(cfg *Config) { cfg.OpTimeout = time.Second })
	}
	key := locking.Key{Family: "contend", Name: "k"}
	var (
		inside    atomic.Int32
		wins      atomic.Int32
		lastToken atomic.Uint64
		failures  = make(chan string, 100)
		wg        sync.WaitGroup
	)
	// Run until 40 acquisitions or 10s: the point is safety under
	// contention, and a loaded machine must not make it a timing test.
	const enough = 40
	deadline := time.Now().Add(10 * time.Second)
	for g := 0; g < 50; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := lockers[g%len(lockers)]
			for time.Now().Before(deadline) && wins.Load() < enough {
				lease, err := l.Acquire(ctx, key, 2*time.Second)
				if err != nil {
					if !errors.Is(err, locking.ErrNotAcquired) && !errors.Is(err, locking.ErrNoQuorum) {
						failures <- err.Error()
						return
					}
					// Jittered back-off, as Redlock clients do: without
					// it 50 tight loops mostly split the vote.
					time.Sleep(time.Duration(1+rand.IntN(5000)) * time.Microsecond)
					continue
				}
				if n := inside.Add(1); n != 1 {
					failures <- fmt.Sprintf("%d holders at once", n)
				}
				if prev := lastToken.Swap(lease.Token()); lease.Token() <= prev {
					failures <- fmt.Sprintf("token %d after %d", lease.Token(), prev)
				}
				wins.Add(1)
				time.Sleep(200 * time.Microsecond)
				inside.Add(-1)
				if err := lease.End(ctx, locking.Ending{}).Err; err != nil {
					failures <- "release: " + err.Error()
				}
			}
		}()
	}
	wg.Wait()
	close(failures)
	for f := range failures {
		t.Error(f)
	}
	if wins.Load() < 10 {
		t.Fatalf("only %d acquisitions in 10s", wins.Load())
	}
	t.Logf("%d acquisitions", wins.Load())
}

// A client that wins only a minority undoes its writes there.
func TestRedlockMinorityRolledBack(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 10*time.Second)
	l := newTestRedlock(t, c.Addrs(), "me")
	key := locking.Key{Family: "job", Name: "minority"}

	// Node 1 is held by "other", node 2 is down: we can win node 0 only.
	if err := c.Node(1).Client().Set(ctx, rkey(key), "0123|other", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Node(2).Kill(); err != nil {
		t.Fatal(err)
	}
	_, err := l.Acquire(ctx, key, 10*time.Second)
	if err == nil {
		t.Fatal("acquired with one node of three")
	}
	if errors.Is(err, locking.ErrNoQuorum) == errors.Is(err, locking.ErrNotAcquired) {
		t.Fatalf("want exactly one of no-quorum or not-acquired: %v", err)
	}
	if n := c.Node(0).Client().Exists(ctx, rkey(key)).Val(); n != 0 {
		t.Fatalf("node 0 kept the minority write: %q", c.Node(0).Client().Get(ctx, rkey(key)).Val())
	}
	if v := c.Node(1).Client().Get(ctx, rkey(key)).Val(); v != "0123|other" {
		t.Fatalf("node 1's holder was touched: %q", v)
	}
	// The failed attempt may have raised node 0's fence counter to its
	// proposal (max-assign, harmless); the next winner's token is above it.
	f0, _ := c.Node(0).Client().Get(ctx, "t:{job}:fence").Uint64()
	if err := c.Node(1).Client().Del(ctx, rkey(key)).Err(); err != nil {
		t.Fatal(err)
	}
	lease, err := l.Acquire(ctx, key, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if lease.Token() <= f0 {
		t.Fatalf("token %d not above node 0's counter %d", lease.Token(), f0)
	}
}

// Three replicas each win one node: a split vote, undone everywhere.
func TestRedlockSplitVote(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 10*time.Second)
	l := newTestRedlock(t, c.Addrs(), "me")
	key := locking.Key{Family: "job", Name: "split"}
	c.Node(1).Client().Set(ctx, rkey(key), "aaaa|r1", time.Minute)
	c.Node(2).Client().Set(ctx, rkey(key), "bbbb|r2", time.Minute)
	_, err := l.Acquire(ctx, key, 5*time.Second)
	var held *locking.HeldError
	if !errors.Is(err, locking.ErrSplitVote) || !errors.Is(err, locking.ErrNotAcquired) || !errors.As(err, &held) {
		t.Fatalf("want a split vote, got %v", err)
	}
	if held.Holder != "r1" || held.Done {
		t.Fatalf("holder %+v", held)
	}
	if c.Node(0).Client().Exists(ctx, rkey(key)).Val() != 0 {
		t.Fatal("split vote left our write on node 0")
	}
	// When one holder has a majority, it is a plain HeldError.
	c.Node(0).Client().Set(ctx, rkey(key), "bbbb|r2", time.Minute)
	_, err = l.Acquire(ctx, key, 5*time.Second)
	if !errors.As(err, &held) || errors.Is(err, locking.ErrSplitVote) || held.Holder != "r2" {
		t.Fatalf("majority holder: %v", err)
	}
}

// A done marker on any one node refuses the acquisition, even when a
// majority would let it in.
func TestRedlockDoneMarkerOnOneNode(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 10*time.Second)
	l := newTestRedlock(t, c.Addrs(), "me")
	key := locking.Key{Family: "job", Name: "slot:9"}
	c.Node(2).Client().Set(ctx, rkey(key), "done|r7|failed", time.Minute)
	_, err := l.Acquire(ctx, key, 5*time.Second)
	var held *locking.HeldError
	if !errors.As(err, &held) || !held.Done || held.Holder != "r7" || held.Note != "failed" {
		t.Fatalf("got %v", err)
	}
	for _, i := range []int{0, 1} {
		if c.Node(i).Client().Exists(ctx, rkey(key)).Val() != 0 {
			t.Fatalf("node %d kept the write", i)
		}
	}
}

func TestRedlockOneNodeDownStillLocks(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 10*time.Second)
	l := newTestRedlock(t, c.Addrs(), "me")
	if err := c.Node(1).Kill(); err != nil {
		t.Fatal(err)
	}
	lease, err := l.Acquire(ctx, locking.Key{Family: "job", Name: "x"}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.Extend(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lease.End(ctx, locking.Ending{}).Err; err != nil {
		t.Fatal(err)
	}
	st, err := l.Ping(ctx)
	if err != nil || len(st) != 3 || st[1].Up || !st[0].Up || st[1].Addr != c.Node(1).Addr() {
		t.Fatalf("ping: %v %+v", err, st)
	}

	// A frozen node (connections open, no answers) costs one op timeout
	// per round, not a TTL.
	if err := c.Node(1).Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Ping(ctx); err != nil { // open connections to all three
		t.Fatal(err)
	}
	if err := c.Node(2).Pause(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	lease, err = l.Acquire(ctx, locking.Key{Family: "job", Name: "y"}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*testOpTimeout {
		t.Fatalf("acquire with a frozen node took %v", took)
	}
	if err := lease.End(ctx, locking.Ending{}).Err; err != nil {
		t.Fatal(err)
	}
	if err := c.Node(2).Resume(); err != nil {
		t.Fatal(err)
	}
}

func TestRedlockTwoNodesDownFailsFast(t *testing.T) {
	for _, fault := range []string{"killed", "paused"} {
		t.Run(fault, func(t *testing.T) {
			c := redistest.Start(t, 3)
			ctx := tctx(t, 10*time.Second)
			l := newTestRedlock(t, c.Addrs(), "me")
			// Warm the connections so a paused node holds open sockets.
			if _, err := l.Ping(ctx); err != nil {
				t.Fatal(err)
			}
			for _, i := range []int{1, 2} {
				var err error
				if fault == "killed" {
					err = c.Node(i).Kill()
				} else {
					err = c.Node(i).Pause()
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			start := time.Now()
			_, err := l.Acquire(ctx, locking.Key{Family: "job", Name: "x"}, 10*time.Second)
			took := time.Since(start)
			var qe *locking.QuorumError
			if !errors.As(err, &qe) || !errors.Is(err, locking.ErrNoQuorum) || qe.Need != 2 || qe.Got != 1 || qe.Op != "acquire" {
				t.Fatalf("got %v", err)
			}
			for _, i := range []int{1, 2} {
				if !strings.Contains(err.Error(), c.Node(i).Addr()) {
					t.Fatalf("error does not name %s: %v", c.Node(i).Addr(), err)
				}
			}
			var ne *locking.NodeError
			if !errors.As(err, &ne) {
				t.Fatalf("no NodeError in %v", err)
			}
			// Acquire + undo: two rounds, each bounded by one op timeout.
			if took > 10*testOpTimeout {
				t.Fatalf("took %v, more than a few op timeouts", took)
			}
			// Node 0 kept nothing.
			if c.Node(0).Client().Exists(ctx, "t:{job}:x").Val() != 0 {
				t.Fatal("node 0 kept the write")
			}
			if _, err := l.Ping(ctx); !errors.Is(err, locking.ErrNoQuorum) {
				t.Fatalf("ping: %v", err)
			}
		})
	}
}

// New does not fail while the nodes are down; it works once they
// are up.
func TestRedlockStartsDuringOutage(t *testing.T) {
	c := redistest.Start(t, 3)
	for _, n := range c.Nodes() {
		if err := n.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	ctx := tctx(t, 15*time.Second)
	l := newTestRedlock(t, c.Addrs(), "me")
	if _, err := l.Acquire(ctx, locking.Key{Family: "f", Name: "n"}, time.Second); !errors.Is(err, locking.ErrNoQuorum) {
		t.Fatalf("during outage: %v", err)
	}
	for _, n := range c.Nodes() {
		if err := n.Start(); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var lease *locking.Lease
		if lease, err = l.Acquire(ctx, locking.Key{Family: "f", Name: "n"}, time.Second); err == nil {
			lease.End(ctx, locking.Ending{})
			return
		}
	}
	t.Fatalf("still failing after the nodes came back: %v", err)
}

// The watchdog keeps a lease through 5×TTL of work while another client
// keeps trying to take it.
func TestRedlockWatchdogHolds(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 20*time.Second)
	// Renewals get 250ms each: a loaded CI machine must not turn a slow
	// renewal into a lost lease; the point here is the watchdog's cadence.
	slow := func(cfg *Config) { cfg.OpTimeout = 250 * time.Millisecond }
	a := newTestRedlock(t, c.Addrs(), "a", slow)
	b := newTestRedlock(t, c.Addrs(), "b", slow)
	key := locking.Key{Family: "job", Name: "long"}
	const ttl = 600 * time.Millisecond
	lease, err := a.Acquire(ctx, key, ttl)
	if err != nil {
		t.Fatal(err)
	}
	kctx := lease.Keep(ctx)
	end := time.Now().Add(5 * ttl)
	for time.Now().Before(end) {
		if _, err := b.Acquire(ctx, key, ttl); !errors.Is(err, locking.ErrNotAcquired) {
			t.Fatalf("b during a's work: %v", err)
		}
		select {
		case <-kctx.Done():
			t.Fatalf("kept context ended: %v", context.Cause(kctx))
		case <-lease.Lost():
			t.Fatal("lease lost")
		case <-time.After(ttl / 4):
		}
	}
	if err := lease.End(ctx, locking.Ending{}).Err; err != nil {
		t.Fatal(err)
	}
	if _, err := b.Acquire(ctx, key, ttl); err != nil {
		t.Fatalf("b after release: %v", err)
	}
}

// Nodes paused past the lease's validity: the watchdog cannot renew, the
// lease is lost and its context canceled with ErrLockLost.
func TestRedlockPausedNodesLoseLease(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 20*time.Second)
	l := newTestRedlock(t, c.Addrs(), "a")
	const ttl = 500 * time.Millisecond
	lease, err := l.Acquire(ctx, locking.Key{Family: "job", Name: "paused"}, ttl)
	if err != nil {
		t.Fatal(err)
	}
	kctx := lease.Keep(ctx)
	for _, i := range []int{0, 2} {
		if err := c.Node(i).Pause(); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-kctx.Done():
	case <-time.After(5 * ttl):
		t.Fatal("lease not lost while a majority is paused")
	}
	if !errors.Is(context.Cause(kctx), locking.ErrLockLost) {
		t.Fatalf("cause: %v", context.Cause(kctx))
	}
	select {
	case <-lease.Lost():
	default:
		t.Fatal("Lost not closed")
	}
	if time.Now().Before(lease.ValidUntil()) {
		t.Fatal("lost before ValidUntil")
	}
	for _, i := range []int{0, 2} {
		if err := c.Node(i).Resume(); err != nil {
			t.Fatal(err)
		}
	}
	// The lease is taken as lost up to the drift allowance before the keys
	// expire on the nodes, so Release may still find them (nil) or find
	// them expired (ErrLockLost); either way it leaves nothing behind, not
	// even the copy the watchdog kept alive on node 1.
	if err := lease.End(ctx, locking.Ending{}).Err; err != nil && !errors.Is(err, locking.ErrLockLost) {
		t.Fatalf("release after loss: %v", err)
	}
	for _, n := range c.Nodes() {
		if n.Client().Exists(ctx, "t:{job}:paused").Val() != 0 {
			t.Fatalf("node %s still has the key", n.Addr())
		}
	}
}

// A stale holder (its lease expired, someone else acquired) can neither
// extend nor release the new holder's lock.
func TestRedlockStaleTokenCannotReleaseOrExtend(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 10*time.Second)
	a := newTestRedlock(t, c.Addrs(), "a")
	b := newTestRedlock(t, c.Addrs(), "b")
	key := locking.Key{Family: "job", Name: "stale"}
	la, err := a.Acquire(ctx, key, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	stale := driver.Lease{Key: key, Value: storedValue(t, c, key, la), TTL: 300 * time.Millisecond}
	time.Sleep(400 * time.Millisecond)
	lb, err := b.Acquire(ctx, key, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	vb := storedValue(t, c, key, lb)
	// Ask the nodes directly with the stale value: the front end would
	// refuse before asking, as a's ValidUntil has passed.
	ab := driverOf(a)
	if err := ab.Extend(ctx, driver.Lease{Key: key, Value: stale.Value, TTL: time.Minute}, false); !errors.Is(err, locking.ErrLockLost) {
		t.Fatalf("stale extend: %v", err)
	}
	if err := ab.Release(ctx, stale, driver.End{}).Err; !errors.Is(err, locking.ErrLockLost) {
		t.Fatalf("stale release: %v", err)
	}
	if err := ab.Release(ctx, stale, driver.End{Done: "done|a|x", DoneTTL: time.Minute}).Err; !errors.Is(err, locking.ErrLockLost) {
		t.Fatalf("stale mark done: %v", err)
	}
	if err := la.Extend(ctx); !errors.Is(err, locking.ErrLockLost) {
		t.Fatalf("stale lease Extend: %v", err)
	}
	if err := la.End(ctx, locking.Ending{}).Err; !errors.Is(err, locking.ErrLockLost) {
		t.Fatalf("stale lease Release: %v", err)
	}
	for _, n := range c.Nodes() {
		if v := n.Client().Get(ctx, rkey(key)).Val(); v != vb {
			t.Fatalf("node %s: %q, want b's value", n.Addr(), v)
		}
		if ttl := n.Client().PTTL(ctx, rkey(key)).Val(); ttl > 10*time.Second {
			t.Fatalf("node %s: ttl %v was extended by the stale holder", n.Addr(), ttl)
		}
	}
	if err := lb.End(ctx, locking.Ending{}).Err; err != nil {
		t.Fatal(err)
	}
}

// Fencing tokens strictly increase across 1,000 acquisitions by competing
// clients while one node, with an append-only file, restarts with its data.
func TestRedlockFencingAcrossRestart(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 200
	}
	c := redistest.Start(t, 3, redistest.AppendOnlyOn(0))
	ctx := tctx(t, 60*time.Second)
	lockers := make([]locking.Locker, 4)
	for i := range lockers {
		lockers[i] = newTestRedlock(t, c.Addrs(), fmt.Sprintf("r%d", i))
	}
	key := locking.Key{Family: "fence", Name: "run"}
	var (
		mu       sync.Mutex
		tokens   []uint64
		wins     atomic.Int32
		failures = make(chan string, 100)
		wg       sync.WaitGroup
		stop     = make(chan struct{})
	)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := lockers[g%len(lockers)]
			for wins.Load() < int32(n) && ctx.Err() == nil {
				lease, err := l.Acquire(ctx, key, 2*time.Second)
				if err != nil {
					if !errors.Is(err, locking.ErrNotAcquired) && !errors.Is(err, locking.ErrNoQuorum) {
						failures <- err.Error()
						return
					}
					time.Sleep(200 * time.Microsecond)
					continue
				}
				mu.Lock() // uncontended while the lock is exclusive
				if k := len(tokens); k > 0 && lease.Token() <= tokens[k-1] {
					failures <- fmt.Sprintf("token %d after %d", lease.Token(), tokens[k-1])
				}
				tokens = append(tokens, lease.Token())
				mu.Unlock()
				wins.Add(1)
				if err := lease.End(ctx, locking.Ending{}).Err; err != nil && !errors.Is(err, locking.ErrNoQuorum) {
					failures <- "release: " + err.Error()
				}
			}
		}()
	}
	restarts := 0
	go func() {
		defer close(stop)
		for wins.Load() < int32(n) && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
			// Alternate a graceful restart with a crash (SIGKILL): with
			// appendfsync always both keep every acknowledged write.
			var err error
			if restarts%2 == 0 {
				err = c.Node(0).Restart()
			} else if err = c.Node(0).Kill(); err == nil {
				err = c.Node(0).Start()
			}
			if err != nil {
				failures <- "restart: " + err.Error()
				return
			}
			restarts++
		}
	}()
	wg.Wait()
	<-stop
	close(failures)
	for f := range failures {
		t.Error(f)
	}
	if len(tokens) < n {
		t.Fatalf("only %d acquisitions", len(tokens))
	}
	if restarts == 0 {
		t.Fatal("node 0 never restarted during the run")
	}
	last := tokens[len(tokens)-1]
	onMax := 0
	for _, nd := range c.Nodes() {
		f, err := nd.Client().Get(ctx, "t:{fence}:fence").Uint64()
		if err != nil {
			t.Fatalf("node %s: %v", nd.Addr(), err)
		}
		if f >= last {
			onMax++
		}
	}
	if onMax < 2 {
		t.Fatalf("last token %d is on %d nodes, want a majority", last, onMax)
	}
	t.Logf("%d acquisitions, %d restarts of node 0, last token %d", len(tokens), restarts, last)
}

func TestRedlockRecords(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 10*time.Second)
	l := newTestRedlock(t, c.Addrs(), "me")
	key := locking.Key{Family: "job", Name: "last"}
	if v, err := l.ReadRecord(ctx, key); err != nil || v != 0 {
		t.Fatalf("unwritten record: %d, %v", v, err)
	}
	if err := l.AdvanceRecord(ctx, key, 100); err != nil {
		t.Fatal(err)
	}
	if err := l.AdvanceRecord(ctx, key, 50); err != nil {
		t.Fatal(err)
	}
	if v, err := l.ReadRecord(ctx, key); err != nil || v != 100 {
		t.Fatalf("record: %d, %v", v, err)
	}
	// A value that reached one node only is repaired onto a majority by
	// the read that sees it.
	c.Node(2).Client().Set(ctx, rkey(key), 170, 0)
	if v, err := l.ReadRecord(ctx, key); err != nil || v != 170 {
		t.Fatalf("record after partial write: %d, %v", v, err)
	}
	for _, n := range c.Nodes() {
		if v, _ := n.Client().Get(ctx, rkey(key)).Int64(); v != 170 {
			t.Fatalf("node %s not repaired: %d", n.Addr(), v)
		}
	}
	if err := l.AdvanceRecord(ctx, key, 1<<60); err == nil {
		t.Fatal("a value above 2^53 was accepted")
	}
	if err := l.AdvanceRecord(ctx, locking.Key{Family: "job", Name: "fence"}, 1); err == nil {
		t.Fatal("the reserved fence name was accepted")
	}
	// With two nodes down, records fail with a quorum error.
	_ = c.Node(0).Kill()
	_ = c.Node(1).Kill()
	if err := l.AdvanceRecord(ctx, key, 200); !errors.Is(err, locking.ErrNoQuorum) {
		t.Fatalf("advance without quorum: %v", err)
	}
	if _, err := l.ReadRecord(ctx, key); !errors.Is(err, locking.ErrNoQuorum) {
		t.Fatalf("read without quorum: %v", err)
	}
}

func TestRedlockCanceledContext(t *testing.T) {
	c := redistest.Start(t, 3)
	l := newTestRedlock(t, c.Addrs(), "me")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Acquire(ctx, locking.Key{Family: "f", Name: "n"}, time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("acquire: %v", err)
	}
	// Canceled while waiting on paused nodes: ctx.Err(), and nothing left
	// behind on the node that answered.
	for _, i := range []int{1, 2} {
		_ = c.Node(i).Pause()
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel2()
	if _, err := l.Acquire(ctx2, locking.Key{Family: "f", Name: "n"}, time.Second); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("acquire: %v", err)
	}
	if c.Node(0).Client().Exists(context.Background(), "t:{f}:n").Val() != 0 {
		t.Fatal("canceled acquisition left its write on node 0")
	}
}

func TestRedlockTLSAndAuth(t *testing.T) {
	t.Run("tls+password", func(t *testing.T) {
		c := redistest.Start(t, 3, redistest.TLS(), redistest.Password("pw-s3cret"))
		ctx := tctx(t, 10*time.Second)
		l := newTestRedlock(t, c.Addrs(), "me", func(cfg *Config) {
			cfg.TLS = true
			cfg.TLSConfig = c.ClientTLS()
			cfg.TLSConfig.ServerName = "" // filled from the address
			cfg.Password = "pw-s3cret"
		})
		lease, err := l.Acquire(ctx, locking.Key{Family: "f", Name: "n"}, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := lease.End(ctx, locking.Ending{}).Err; err != nil {
			t.Fatal(err)
		}
		// System roots do not trust the throwaway CA: every node refuses.
		sys := newTestRedlock(t, c.Addrs(), "me", func(cfg *Config) {
			// Generous: a TLS handshake under -race on a busy machine
			// must fail on the certificate, not on the clock — the dial
			// too (its 250 ms default ran out in a full suite's run).
			cfg.TLS, cfg.Password, cfg.OpTimeout, cfg.DialTimeout = true, "pw-s3cret", 5*time.Second, 5*time.Second
		})
		if _, err := sys.Acquire(ctx, locking.Key{Family: "f", Name: "n"}, time.Second); !errors.Is(err, locking.ErrNoQuorum) || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("untrusted CA: %v", err)
		}
		// A wrong password fails, and no password appears in the error.
		bad := newTestRedlock(t, c.Addrs(), "me", func(cfg *Config) {
			cfg.TLSConfig, cfg.Password = c.ClientTLS(), "wrong-pw"
		})
		_, err = bad.Acquire(ctx, locking.Key{Family: "f", Name: "n"}, time.Second)
		if !errors.Is(err, locking.ErrNoQuorum) || strings.Contains(err.Error(), "wrong-pw") || strings.Contains(err.Error(), "pw-s3cret") {
			t.Fatalf("wrong password: %v", err)
		}
	})
	t.Run("acl user via credentials provider", func(t *testing.T) {
		c := redistest.Start(t, 3, redistest.User("svc", "tok-1"))
		ctx := tctx(t, 10*time.Second)
		var calls atomic.Int32
		l := newTestRedlock(t, c.Addrs(), "me", func(cfg *Config) {
			cfg.CredentialsProvider = func(context.Context) (string, string, error) {
				calls.Add(1)
				return "svc", "tok-1", nil
			}
		})
		lease, err := l.Acquire(ctx, locking.Key{Family: "f", Name: "n"}, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := lease.End(ctx, locking.Ending{}).Err; err != nil {
			t.Fatal(err)
		}
		if calls.Load() == 0 {
			t.Fatal("credentials provider never asked")
		}
	})
}

func TestNewRedlockConfigErrors(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{Nodes: []string{"no-port"}},
		{Nodes: []string{"a:1", "a:1"}},
		{Nodes: []string{"a:1"}, KeyPrefix: "x{y}"},
	} {
		if _, err := newLocker(cfg, locking.Options{}); err == nil {
			t.Errorf("%+v: no error", cfg)
		}
	}
	l, err := newLocker(Config{Nodes: []string{"127.0.0.1:1"}}, locking.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Mode() != "redlock(1 node)" {
		t.Fatal(l.Mode())
	}
	rl := driverOf(l)
	if rl.opTimeout != DefaultOpTimeout || rl.prefix != DefaultKeyPrefix {
		t.Fatalf("defaults: %v %q", rl.opTimeout, rl.prefix)
	}
	if _, err := l.Acquire(context.Background(), locking.Key{Name: "x"}, time.Second); err == nil {
		t.Fatal("empty family accepted")
	}
}

// A node may be a Redis Cluster endpoint: keys whose slot lives on another
// shard come back as MOVED, and the node switches to a cluster client.
func TestRedlockClusterEndpoint(t *testing.T) {
	c := redistest.StartShards(t, 1, 2).Node(0)
	ctx := tctx(t, 20*time.Second)
	// One Redlock "node" = the cluster, reached through node 0's address.
	l := newTestRedlock(t, []string{c.Node(0).Addr()}, "me", func(cfg *Config) { cfg.OpTimeout = time.Second })
	onB := 0
	for i := 0; i < 8; i++ {
		fam := fmt.Sprintf("job%d", i)
		if redistest.ShardOf(fam, 2) == 1 {
			onB++
		}
		lease, err := l.Acquire(ctx, locking.Key{Family: fam, Name: "slot:1"}, 5*time.Second)
		if err != nil {
			t.Fatalf("family %s (slot %d): %v", fam, redistest.KeySlot(fam), err)
		}
		if err := lease.Extend(ctx); err != nil {
			t.Fatal(err)
		}
		if err := l.AdvanceRecord(ctx, locking.Key{Family: fam, Name: "last"}, 7); err != nil {
			t.Fatal(err)
		}
		if v, err := l.ReadRecord(ctx, locking.Key{Family: fam, Name: "last"}); err != nil || v != 7 {
			t.Fatalf("record: %d %v", v, err)
		}
		if err := lease.End(ctx, locking.Ending{}).Err; err != nil {
			t.Fatal(err)
		}
	}
	if onB == 0 {
		t.Fatal("no family hashed to the second shard; the test proves nothing")
	}
	if !driverOf(l).nodes[0].(*redisNode).cluster.Load() {
		t.Fatal("node did not switch to a cluster client")
	}
	// Handled, as a fresh locker's first call, over keys of both shards:
	// its MGET is refused across slots, and it reads them key by key.
	claim, err := l.Claim(ctx, locking.Key{Family: "job0", Name: "slot:2"}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := claim.End(ctx, locking.Ending{DoneTTL: time.Minute, Note: "succeeded"}).Err; err != nil {
		t.Fatal(err)
	}
	l2 := newTestRedlock(t, []string{c.Node(0).Addr()}, "me2", func(cfg *Config) { cfg.OpTimeout = time.Second })
	var keys []locking.Key
	for i := 0; i < 8; i++ {
		keys = append(keys, locking.Key{Family: fmt.Sprintf("job%d", i), Name: "slot:1"})
	}
	keys = append(keys, locking.Key{Family: "job0", Name: "slot:2"})
	got, err := l2.Handled(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	if want := []bool{false, false, false, false, false, false, false, false, true}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Handled = %v, want %v", got, want)
	}
}

// Tokens stay increasing when lockers with stale hints alternate (the
// fallback round), and follow a counter that a majority member holds.
func TestRedlockTokenHintsAndFallback(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 10*time.Second)
	ls := []locking.Locker{
		newTestRedlock(t, c.Addrs(), "a"),
		newTestRedlock(t, c.Addrs(), "b"),
		newTestRedlock(t, c.Addrs(), "c"),
	}
	var last uint64
	for i := 0; i < 30; i++ {
		lease, err := ls[i%3].Acquire(ctx, locking.Key{Family: "hint", Name: fmt.Sprintf("slot:%d", i%4)}, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if lease.Token() <= last {
			t.Fatalf("acquisition %d: token %d after %d", i, lease.Token(), last)
		}
		last = lease.Token()
		if err := lease.End(ctx, locking.Ending{}).Err; err != nil {
			t.Fatal(err)
		}
	}
	// Two nodes carry higher counters, each its own (writes that reached
	// them alone): no majority of winners agrees, so the next token is the
	// highest, written back to the others before it is returned.
	c.Node(1).Client().Set(ctx, "t:{hint}:fence", 500, 0)
	c.Node(2).Client().Set(ctx, "t:{hint}:fence", 1000, 0)
	lease, err := ls[0].Acquire(ctx, locking.Key{Family: "hint", Name: "x"}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if lease.Token() != 1001 {
		t.Fatalf("token %d, want 1001", lease.Token())
	}
	for _, n := range c.Nodes() {
		if f, _ := n.Client().Get(ctx, "t:{hint}:fence").Uint64(); f != 1001 {
			t.Fatalf("node %s: counter %d, want 1001", n.Addr(), f)
		}
	}
	// One node that lost its counter (restarted empty): the other two
	// agree, so the token needs no write-back round.
	c.Node(0).Client().Del(ctx, "t:{hint}:fence")
	writeBacks := 0
	driverOf(ls[1]).hookBeforeFence = func(locking.Key) { writeBacks++ }
	lease, err = ls[1].Acquire(ctx, locking.Key{Family: "hint", Name: "y"}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if lease.Token() != 1002 || writeBacks != 0 {
		t.Fatalf("token %d after %d write-back rounds, want 1002 after none", lease.Token(), writeBacks)
	}
}

// A node going down and coming back is logged once each way, with its
// address and never the password.
func TestRedlockLogsNodeTransitions(t *testing.T) {
	c := redistest.Start(t, 3, redistest.Password("hunter2-secret"))
	ctx := tctx(t, 15*time.Second)
	var buf syncBuf
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	l, err := newLocker(Config{Nodes: c.Addrs(), Password: "hunter2-secret", OpTimeout: testOpTimeout}, locking.Options{Replica: "me", Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	down := c.Node(1)
	if err := down.Kill(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		lease, err := l.Acquire(ctx, locking.Key{Family: "log", Name: "k"}, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		lease.End(ctx, locking.Ending{})
	}
	if n := strings.Count(buf.String(), "redis node unreachable"); n != 1 {
		t.Fatalf("unreachable logged %d times:\n%s", n, buf.String())
	}
	if !strings.Contains(buf.String(), down.Addr()) {
		t.Fatalf("log does not name %s:\n%s", down.Addr(), buf.String())
	}
	if err := down.Start(); err != nil {
		t.Fatal(err)
	}
	// The node is back when it takes a write again (a PING is answered by
	// a node whose writes are paused too): a lease, as a replica's next
	// slot would take.
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(buf.String(), "reachable again"); {
		if time.Now().After(deadline) {
			t.Fatalf("recovery not logged:\n%s", buf.String())
		}
		lease, err := l.Acquire(ctx, locking.Key{Family: "log", Name: "k"}, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		lease.End(ctx, locking.Ending{})
		time.Sleep(50 * time.Millisecond)
	}
	if strings.Contains(buf.String(), "hunter2") {
		t.Fatalf("the password leaked into the log:\n%s", buf.String())
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The documented limit, shown: when a node restarts WITHOUT persistence,
// a later majority made of it and a node that missed the last write can
// hand out a token that is not greater. (With an append-only file, see
// TestRedlockFencingAcrossRestart, it cannot.)
func TestRedlockLimitRestartWithoutPersistence(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 15*time.Second)
	key := locking.Key{Family: "limit", Name: "run"}
	a := newTestRedlock(t, c.Addrs(), "a")
	// Node 2 misses the acquisitions (down); the token is durable on 0+1.
	if err := c.Node(2).Kill(); err != nil {
		t.Fatal(err)
	}
	var first *locking.Lease
	for i := 0; i < 5; i++ {
		l, err := a.Acquire(ctx, key, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		first = l
		if err := l.End(ctx, locking.Ending{}).Err; err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Node(2).Start(); err != nil {
		t.Fatal(err)
	}
	// Node 0 restarts empty, node 1 becomes unreachable: the majority is
	// now {0 (empty), 2 (stale)}.
	if err := c.Node(0).Restart(); err != nil {
		t.Fatal(err)
	}
	if err := c.Node(1).Kill(); err != nil {
		t.Fatal(err)
	}
	b := newTestRedlock(t, c.Addrs(), "b") // no token hint of its own
	var second *locking.Lease
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if second, err = b.Acquire(ctx, key, time.Second); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if second.Token() > first.Token() {
		t.Fatalf("token %d after %d: the scenario did not lose the counter", second.Token(), first.Token())
	}
	t.Logf("without persistence: token %d handed out after %d", second.Token(), first.Token())
}

// Two acquisitions of one family that race through the token write-back
// must not share a token (they used to: each max-assigned the same
// "highest seen + 1"). One acquirer is held between its two rounds while
// another takes a different key of the family; the first then finds its
// token taken and claims the next one.
func TestRedlockRacingWriteBacksGetDistinctTokens(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 10*time.Second)
	warm := newTestRedlock(t, c.Addrs(), "warm")
	for i := range 5 { // the family's counter is 5; a and b know nothing of it
		lease, err := warm.Acquire(ctx, locking.Key{Family: "race", Name: fmt.Sprintf("w%d", i)}, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		lease.End(ctx, locking.Ending{})
	}
	// Two nodes carry higher counters (7 and 9, writes that reached each
	// alone): no majority of the winners of either acquisition agrees, so
	// each claims its token in a write-back round.
	c.Node(1).Client().Set(ctx, "t:{race}:fence", 7, 0)
	c.Node(2).Client().Set(ctx, "t:{race}:fence", 9, 0)
	a := newTestRedlock(t, c.Addrs(), "a")
	b := newTestRedlock(t, c.Addrs(), "b")
	paused, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	driverOf(a).hookBeforeFence = func(locking.Key) {
		once.Do(func() { close(paused); <-resume })
	}
	type res struct {
		lease *locking.Lease
		err   error
	}
	aDone := make(chan res, 1)
	go func() {
		l, err := a.Acquire(ctx, locking.Key{Family: "race", Name: "slot:1"}, 5*time.Second)
		aDone <- res{l, err}
	}()
	<-paused // a has won its key (counters 6, 8, 10); it would write 10 back
	lb, err := b.Acquire(ctx, locking.Key{Family: "race", Name: "slot:2"}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	close(resume)
	ra := <-aDone
	if ra.err != nil {
		t.Fatal(ra.err)
	}
	if ra.lease.Token() == lb.Token() {
		t.Fatalf("both acquisitions got token %d", lb.Token())
	}
	if ra.lease.Token() < lb.Token() {
		t.Fatalf("a succeeded after b but got token %d < %d", ra.lease.Token(), lb.Token())
	}
	// b: counters 7, 9, 11, written back as 11; a then finds 11
	// everywhere and claims 12.
	if lb.Token() != 11 || ra.lease.Token() != 12 {
		t.Fatalf("tokens a=%d b=%d, want 12 and 11", ra.lease.Token(), lb.Token())
	}
}

// An acquisition that used up its validity on the way is reported as such
// (ErrSlowAcquire), not as a held key or a missing quorum.
func TestRedlockSlowAcquireHasItsOwnError(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 10*time.Second)
	l := newTestRedlock(t, c.Addrs(), "a")
	driverOf(l).hookBeforeFence = func(locking.Key) { time.Sleep(300 * time.Millisecond) }
	// Counters that differ between the nodes force the write-back round,
	// which the hook slows past the 200ms TTL.
	c.Node(1).Client().Set(ctx, "t:{slow}:fence", 3, 0)
	c.Node(2).Client().Set(ctx, "t:{slow}:fence", 5, 0)
	_, err := l.Acquire(ctx, locking.Key{Family: "slow", Name: "k"}, 200*time.Millisecond)
	if !errors.Is(err, locking.ErrSlowAcquire) || errors.Is(err, locking.ErrNoQuorum) {
		t.Fatalf("err = %v, want ErrSlowAcquire", err)
	}
	for _, n := range c.Nodes() {
		if v := n.Client().Get(ctx, rkey(locking.Key{Family: "slow", Name: "k"})).Val(); v != "" {
			t.Fatalf("node %s kept %q after the undone acquisition", n.Addr(), v)
		}
	}
}

// A refused AUTH fails every call of a pipeline, not only its first: no
// node counts as up, and nothing is acquired (go-redis does not stamp a
// connection's error on the commands of a pipeline; redisbatch.go does).
func TestRedlockRefusedAuthFailsEveryCall(t *testing.T) {
	c := redistest.Start(t, 3, redistest.Password("right-pw"))
	ctx := tctx(t, 10*time.Second)
	l := newTestRedlock(t, c.Addrs(), "a", func(cfg *Config) { cfg.Password = "wrong-pw" })
	st, err := l.Ping(ctx)
	if !errors.Is(err, locking.ErrNoQuorum) {
		t.Fatalf("Ping: %v, want ErrNoQuorum", err)
	}
	for _, s := range st {
		if s.Up || s.Err == nil {
			t.Errorf("node %s: up %v, err %v; want down with the refusal", s.Addr, s.Up, s.Err)
		}
	}
	var wg sync.WaitGroup
	for i := range 20 { // many calls, so that they share pipelines
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := l.Acquire(ctx, locking.Key{Family: "auth", Name: fmt.Sprint(i)}, time.Second); !errors.Is(err, locking.ErrNoQuorum) {
				t.Errorf("Acquire %d: %v, want ErrNoQuorum", i, err)
			}
		}()
	}
	wg.Wait()
}

// An acquisition that a frozen node runs only after its undo (the node
// resumes and runs what had queued on its connections in no set order)
// changes nothing there: the undo of a node that did not answer left a
// tombstone of the value, which the acquire script honours. Here the undo
// runs first on every node, then the "late" acquisition of a joint claim.
func TestRedlockUndoTombstoneRefusesALateAcquire(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 10*time.Second)
	l := newTestRedlock(t, c.Addrs(), "a")
	r := driverOf(l)
	s := jointSpec("tomb")
	silent := errors.New("no answer")
	r.undo(ctx, s, nil, []error{silent, silent, silent})
	op := jointOp(r, s)
	for _, n := range r.nodes {
		res, err := n.Do(ctx, op)
		if err != nil || res.Status != 0 || res.AlsoStatus != 0 {
			t.Fatalf("late acquisition on %s: %+v, %v; want refused", n.Addr(), res, err)
		}
	}
	// Nothing was left: another replica claims the slot with the job lease.
	b := newTestRedlock(t, c.Addrs(), "b")
	lease, err := b.Claim(ctx, s.Key, 5*time.Second, locking.With(s.Also.Key))
	if err != nil || lease.Grant().Abandoned != nil || lease.Grant().Leftover || lease.Grant().Joined == nil {
		t.Fatalf("claim after the late acquisition: %v, %v", lease, err)
	}
	// Without the tombstone the same late acquisition takes the keys.
	s2 := s
	s2.Key, s2.Value = locking.Key{Family: "tomb", Name: "slot:2"}, testToken()+"|a"
	r.undo(ctx, s2, nil, nil)
	op2 := jointOp(r, s2)
	if res, err := r.nodes[0].Do(ctx, op2); err != nil || res.Status != 1 {
		t.Fatalf("acquisition without a tombstone: %+v, %v; want set", res, err)
	}
}

// A joint acquisition (claim with job lease) that a node runs long after
// it was sent takes the claim there, as any claim, but not the job lease:
// a job lease left on a majority by requests that queued on frozen nodes
// would keep the job's next runs out for a ttl (scheduler
// TestRedisQuorumLost).
func TestRedlockLateJointAcquireTakesNoJobLease(t *testing.T) {
	c := redistest.Start(t, 1)
	ctx := tctx(t, 10*time.Second)
	l := newTestRedlock(t, c.Addrs(), "a")
	r := driverOf(l)
	s := jointSpec("late")
	op := jointOp(r, s)
	op.SentMS, op.FreshMS = time.Now().Add(-3*time.Second).UnixMilli(), 1100
	res, err := r.nodes[0].Do(ctx, op)
	if err != nil || res.Status != 1 || res.AlsoStatus != 0 {
		t.Fatalf("late joint acquisition: %+v, %v; want the claim without the job lease", res, err)
	}
	if v := c.Node(0).Client().Get(ctx, r.key(s.Also.Key)).Val(); v != "" {
		t.Fatalf("job lease %q set by a late request", v)
	}
	op.Field, op.Key = "slot:2", r.key(locking.Key{Family: "late", Name: "slot:2"})
	op.SentMS = time.Now().UnixMilli()
	if res, err := r.nodes[0].Do(ctx, op); err != nil || res.Status != 1 || res.AlsoStatus != 1 {
		t.Fatalf("fresh joint acquisition: %+v, %v; want both", res, err)
	}
}

// jointSpec is a joint claim of slot:1 with the job lease run in family.
func jointSpec(family string) driver.Lease {
	return driver.Lease{Key: locking.Key{Family: family, Name: "slot:1"}, Value: testToken() + "|a", TTL: 5 * time.Second, Claim: true,
		Also: &driver.Lease{Key: locking.Key{Family: family, Name: "run"}, Value: testToken() + "|a", TTL: 5 * time.Second}}
}

// jointOp is the acquire op of s as the acquisition sends it, sent now.
func jointOp(r *redlock, s driver.Lease) driver.AcquireOp {
	op := r.acquireOp(s)
	op.Fence, op.N, op.Tomb = r.fenceKey(s.Key.Family), 1, r.tombKey(s)
	op.Also, op.AlsoValue = r.key(s.Also.Key), s.Also.Value
	op.SentMS, op.FreshMS = time.Now().UnixMilli(), 1100
	return op
}

// testToken is a fresh random token, as the front end draws one per lease.
func testToken() string {
	var b [16]byte
	crand.Read(b[:])
	return hex.EncodeToString(b[:])
}
