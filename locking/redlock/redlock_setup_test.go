package redlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redistest"
)

// Reaching the nodes: TLS and AUTH, configuration errors, cluster
// endpoints, a refused AUTH.

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
