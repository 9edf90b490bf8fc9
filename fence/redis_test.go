package fence_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotlock/slotlock/fence"
	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redistest"
)

func fenceOf(t *testing.T, c redis.Cmdable, key string) string {
	t.Helper()
	fk, err := fence.FenceKey(key)
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.Get(context.Background(), fk).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	return v
}

func wantStale(t *testing.T, err error, resource string, token, highest uint64) {
	t.Helper()
	if !errors.Is(err, fence.ErrStale) {
		t.Fatalf("err = %v, want ErrStale", err)
	}
	var se *fence.StaleError
	if !errors.As(err, &se) {
		t.Fatalf("err = %T %v, want a *StaleError", err, err)
	}
	if se.Resource != resource || se.Token != token || se.Highest != highest {
		t.Fatalf("StaleError = %+v, want resource %q token %d highest %d", *se, resource, token, highest)
	}
	var c interface{ ErrorClass() string }
	if !errors.As(err, &c) || c.ErrorClass() != "stale_token" {
		t.Fatalf("error class of %v: want stale_token", err)
	}
}

// A lower token is refused and writes nothing; an equal or higher one
// writes and raises the fence.
func TestRedisSetRefusesLowerToken(t *testing.T) {
	c := redisClient(t)
	ctx := context.Background()
	g := fence.Redis{Client: c}
	key := "{report:set}:latest"
	if err := g.Set(ctx, key, 5, "run 5", 0); err != nil {
		t.Fatal(err)
	}
	wantStale(t, g.Set(ctx, key, 4, "run 4", 0), key, 4, 5)
	if v := c.Get(ctx, key).Val(); v != "run 5" {
		t.Fatalf("value after a stale write = %q, want %q", v, "run 5")
	}
	if err := g.Set(ctx, key, 5, "run 5 again", 0); err != nil {
		t.Fatalf("equal token: %v", err)
	}
	if err := g.Set(ctx, key, 6, "run 6", 0); err != nil {
		t.Fatal(err)
	}
	if v, f := c.Get(ctx, key).Val(), fenceOf(t, c, key); v != "run 6" || f != "6" {
		t.Fatalf("value %q fence %q, want run 6 and 6", v, f)
	}
	if err := g.Set(ctx, key, 7, "expiring", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if ttl := c.PTTL(ctx, key).Val(); ttl <= 0 || ttl > 2*time.Second {
		t.Fatalf("PTTL after Set with ttl 2s = %v", ttl)
	}
	if ttl := c.PTTL(ctx, "{report:set}:latest:fence").Val(); ttl != -1 {
		t.Fatalf("the fence key must not expire; PTTL = %v", ttl)
	}
}

func TestRedisHSetAndXAdd(t *testing.T) {
	c := redisClient(t)
	ctx := context.Background()
	g := fence.Redis{Client: c}

	h := "{acct:7}:balance"
	if err := g.HSet(ctx, h, 10, "amount", 100, "by", "run-10"); err != nil {
		t.Fatal(err)
	}
	wantStale(t, g.HSet(ctx, h, 9, "amount", 90, "by", "run-9"), h, 9, 10)
	if m := c.HGetAll(ctx, h).Val(); m["amount"] != "100" || m["by"] != "run-10" {
		t.Fatalf("hash after stale HSet = %v", m)
	}

	s := "{acct:7}:events"
	id, err := g.XAdd(ctx, s, 3, "ev", "paid")
	if err != nil || id == "" {
		t.Fatalf("XAdd = %q, %v", id, err)
	}
	if _, err := g.XAdd(ctx, s, 2, "ev", "paid twice"); !errors.Is(err, fence.ErrStale) {
		t.Fatalf("stale XAdd: %v", err)
	}
	if n := c.XLen(ctx, s).Val(); n != 1 {
		t.Fatalf("stream length after a stale XAdd = %d, want 1", n)
	}
	if err := g.HSet(ctx, h, 11, "odd"); err == nil {
		t.Fatal("HSet with an odd number of arguments: no error")
	}
}

// A write Redis rejects (wrong type) raises no fence: the token is still
// free for the write done right.
func TestRedisFailedWriteKeepsFence(t *testing.T) {
	c := redisClient(t)
	ctx := context.Background()
	g := fence.Redis{Client: c}
	key := "{wrongtype}:k"
	if err := g.Set(ctx, key, 1, "string", 0); err != nil {
		t.Fatal(err)
	}
	err := g.HSet(ctx, key, 2, "f", "v")
	if err == nil || errors.Is(err, fence.ErrStale) {
		t.Fatalf("HSet on a string: err = %v, want Redis's WRONGTYPE", err)
	}
	if f := fenceOf(t, c, key); f != "1" {
		t.Fatalf("fence after a failed write = %q, want 1", f)
	}
}

// Tokens compare exactly over the whole uint64 range (Lua's numbers are
// doubles: 2^64-1 and 2^64-2 are one double).
func TestRedisTokensCompareExactly(t *testing.T) {
	c := redisClient(t)
	ctx := context.Background()
	g := fence.Redis{Client: c}
	key := "bigtokens"
	if err := g.Set(ctx, key, math.MaxUint64, "max", 0); err != nil {
		t.Fatal(err)
	}
	wantStale(t, g.Set(ctx, key, math.MaxUint64-1, "max-1", 0), key, math.MaxUint64-1, math.MaxUint64)
	wantStale(t, g.Set(ctx, key, 99, "short", 0), key, 99, math.MaxUint64)
	// Ten digits against nine: shorter is lower, whatever the digits.
	key2 := "lengths"
	if err := g.Set(ctx, key2, 999999999, "nine", 0); err != nil {
		t.Fatal(err)
	}
	if err := g.Set(ctx, key2, 1000000000, "ten", 0); err != nil {
		t.Fatal(err)
	}
	wantStale(t, g.Set(ctx, key2, 999999999, "nine again", 0), key2, 999999999, 1000000000)
}

// Writers racing with random tokens: the data ends with the highest
// token's write, and no write was accepted after a higher one.
func TestRedisConcurrentWritersEndWithHighest(t *testing.T) {
	c := redisClient(t)
	ctx := context.Background()
	g := fence.Redis{Client: c}
	key := "{race}:value"
	tokens := rand.Perm(200)
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(tokens); i += 8 {
				tok := uint64(tokens[i] + 1)
				_, err := g.XAdd(ctx, key, tok, "token", tok)
				if err != nil && !errors.Is(err, fence.ErrStale) {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	entries := c.XRange(ctx, key, "-", "+").Val()
	last := uint64(0)
	for _, e := range entries {
		tok, _ := strconv.ParseUint(fmt.Sprint(e.Values["token"]), 10, 64)
		if tok < last {
			t.Fatalf("token %d accepted after %d", tok, last)
		}
		last = tok
	}
	if last != 200 || fenceOf(t, c, key) != "200" {
		t.Fatalf("last accepted token %d, fence %s; want 200", last, fenceOf(t, c, key))
	}
}

func TestFenceKeySharesTheSlot(t *testing.T) {
	for key, want := range map[string]string{
		"report":       "{report}:fence",
		"{acct:7}:bal": "{acct:7}:bal:fence",
		"a{}b":         "",
		"x}y":          "",
		"pre{tag}post": "pre{tag}post:fence",
		"":             "",
	} {
		got, err := fence.FenceKey(key)
		if want == "" { // no tag, and a '}' (or empty): no fence key can share the slot
			if err == nil {
				t.Errorf("FenceKey(%q) = %q, want an error", key, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("FenceKey(%q) = %q, %v; want %q", key, got, err, want)
		}
	}
}

// On a Redis Cluster endpoint every guarded write (tagged key or not) runs:
// the script's two keys share a slot. A single-node cluster owning every
// slot is a real cluster endpoint (CROSSSLOT is checked there too).
func TestRedisGuardOnClusterEndpoint(t *testing.T) {
	rc := redistest.Start(t, 1, redistest.Args("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"))
	ctx := context.Background()
	n := rc.Node(0).Client()
	if err := n.ClusterAddSlotsRange(ctx, 0, 16383).Err(); err != nil {
		t.Fatal(err)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: rc.Addrs()})
	defer cc.Close()
	deadline := time.Now().Add(10 * time.Second)
	for !clusterOK(n.ClusterInfo(ctx).Val()) {
		if time.Now().After(deadline) {
			t.Fatalf("cluster not ok: %s", n.ClusterInfo(ctx).Val())
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, key := range []string{"plain-key", "{user:1}:profile", "pre{tag}post"} {
		fk, _ := fence.FenceKey(key)
		if a, b := n.ClusterKeySlot(ctx, key).Val(), n.ClusterKeySlot(ctx, fk).Val(); a != b {
			t.Errorf("%q in slot %d, its fence %q in slot %d", key, a, fk, b)
		}
		g := fence.Redis{Client: cc}
		if err := g.Set(ctx, key, 2, "v2", 0); err != nil {
			t.Fatalf("guarded SET of %q on a cluster: %v", key, err)
		}
		if err := g.Set(ctx, key, 1, "v1", 0); !errors.Is(err, fence.ErrStale) {
			t.Fatalf("stale SET of %q on a cluster: %v", key, err)
		}
	}
}

func clusterOK(info string) bool { return strings.Contains(info, "cluster_state:ok") }

// A woken stale run of a Go job: slotlock cancels the run's context as soon
// as its watchdog sees the lease lost, with cause locking.ErrLockLost. A
// guarded write under that context fails with context.Canceled before it
// reaches the store, not with ErrStale, and writes nothing: as safe as a
// refusal. context.Cause tells the two apart. (A stale write sent before
// the cancel is refused with ErrStale: TestRedisSetRefusesLowerToken.)
func TestStaleRunWithCanceledContext(t *testing.T) {
	stale := func(t *testing.T, write func(ctx context.Context) error) {
		t.Helper()
		runCtx, cancel := context.WithCancelCause(context.Background())
		cancel(locking.ErrLockLost) // what the scheduler does on lock.lost
		err := write(runCtx)
		if !errors.Is(err, context.Canceled) || errors.Is(err, fence.ErrStale) {
			t.Fatalf("stale write under the canceled run's context: err = %v; want context.Canceled, not ErrStale", err)
		}
		if !errors.Is(context.Cause(runCtx), locking.ErrLockLost) {
			t.Fatalf("cause = %v, want locking.ErrLockLost", context.Cause(runCtx))
		}
	}
	t.Run("redis", func(t *testing.T) {
		c := redisClient(t)
		ctx := context.Background()
		g := fence.Redis{Client: c}
		key := "{report:canceled}:latest"
		if err := g.Set(ctx, key, 8, "run 8", 0); err != nil {
			t.Fatal(err)
		}
		stale(t, func(ctx context.Context) error { return g.Set(ctx, key, 7, "run 7", 0) })
		if v, f := c.Get(ctx, key).Val(), fenceOf(t, c, key); v != "run 8" || f != "8" {
			t.Fatalf("value %q fence %q, want run 8's", v, f)
		}
	})
	t.Run("sql", func(t *testing.T) {
		db := postgres(t)
		ctx := context.Background()
		g := fence.SQL{Table: "fence_canceled"}
		if err := g.CreateTable(ctx, db); err != nil {
			t.Fatal(err)
		}
		if err := g.Exec(ctx, db, "report", 8, func(*sql.Tx) error { return nil }); err != nil {
			t.Fatal(err)
		}
		wrote := false
		stale(t, func(ctx context.Context) error {
			return g.Exec(ctx, db, "report", 7, func(*sql.Tx) error { wrote = true; return nil })
		})
		var token int64
		if err := db.QueryRowContext(ctx, `SELECT token FROM fence_canceled WHERE resource = 'report'`).Scan(&token); err != nil {
			t.Fatal(err)
		}
		if wrote || token != 8 {
			t.Fatalf("write called %v, fence %d; want no write and 8", wrote, token)
		}
	})
}
