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
