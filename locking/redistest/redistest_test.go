package redistest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotlock/slotlock/locking/redistest"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestStartKillPauseRestart(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := ctxT(t)
	seen := map[string]bool{}
	for i, n := range c.Nodes() {
		if seen[n.Addr()] {
			t.Fatalf("node %d reuses %s", i, n.Addr())
		}
		seen[n.Addr()] = true
		if n.Port() == 6379 {
			t.Fatal("must never use port 6379")
		}
		if err := n.Client().Set(ctx, "k", i, 0).Err(); err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
	}
	// Nodes are independent: each keeps its own value.
	for i, n := range c.Nodes() {
		if v, err := n.Client().Get(ctx, "k").Int(); err != nil || v != i {
			t.Fatalf("node %d: got %d, %v", i, v, err)
		}
	}

	n := c.Node(1)
	if err := n.Pause(); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	err := n.Client().Ping(short).Err()
	cancel()
	if err == nil {
		t.Fatal("a paused node answered PING")
	}
	if err := n.Resume(); err != nil {
		t.Fatal(err)
	}
	// The client may hold a connection poisoned by the timed-out read; a
	// fresh command on a fresh connection must work.
	waitPing(t, n)

	pid := n.PID()
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if n.Running() || n.PID() != 0 {
		t.Fatal("node still running after Kill")
	}
	if processAlive(pid) {
		t.Fatalf("pid %d still alive after Kill", pid)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	waitPing(t, n)
	// Without persistence a restarted node comes back empty.
	if err := n.Client().Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("restarted node without AOF kept data: %v", err)
	}
}

func TestAppendOnlyRestartKeepsData(t *testing.T) {
	c := redistest.Start(t, 1, redistest.AppendOnly())
	n := c.Node(0)
	ctx := ctxT(t)
	if err := n.Client().Set(ctx, "fence", 41, 0).Err(); err != nil {
		t.Fatal(err)
	}
	port := n.Port()
	if err := n.Restart(); err != nil {
		t.Fatal(err)
	}
	if n.Port() != port {
		t.Fatalf("port changed across Restart: %d -> %d", port, n.Port())
	}
	waitPing(t, n)
	if v, err := n.Client().Get(ctx, "fence").Int(); err != nil || v != 41 {
		t.Fatalf("after restart: %d, %v", v, err)
	}
	// Even SIGKILL keeps acknowledged writes with appendfsync always.
	if err := n.Client().Incr(ctx, "fence").Err(); err != nil {
		t.Fatal(err)
	}
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	waitPing(t, n)
	if v, err := n.Client().Get(ctx, "fence").Int(); err != nil || v != 42 {
		t.Fatalf("after kill: %d, %v", v, err)
	}
	// StartEmpty: the same node, its data gone before it answers anyone.
	if err := n.StartEmpty(); err == nil {
		t.Fatal("StartEmpty of a running node: no error")
	}
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := n.StartEmpty(); err != nil {
		t.Fatal(err)
	}
	waitPing(t, n)
	if n.Port() != port {
		t.Fatalf("port changed across StartEmpty: %d -> %d", port, n.Port())
	}
	if err := n.Client().Get(ctx, "fence").Err(); err != redis.Nil {
		t.Fatalf("after StartEmpty: fence %v, want no key", err)
	}
}

func TestTLSAndPassword(t *testing.T) {
	c := redistest.Start(t, 1, redistest.TLS(), redistest.Password("s3cret"))
	ctx := ctxT(t)
	if err := c.Node(0).Client().Ping(ctx).Err(); err != nil {
		t.Fatalf("TLS client with password: %v", err)
	}
	// Plain TCP to a TLS-only port fails.
	plain := redis.NewClient(&redis.Options{Addr: c.Addrs()[0], Password: "s3cret", MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 500 * time.Millisecond})
	defer plain.Close()
	if err := plain.Ping(ctx).Err(); err == nil {
		t.Fatal("plain TCP PING to a TLS-only node succeeded")
	}
	// TLS without the password is refused.
	noauth := redis.NewClient(&redis.Options{Addr: c.Addrs()[0], TLSConfig: c.ClientTLS(), MaxRetries: -1})
	defer noauth.Close()
	if err := noauth.Ping(ctx).Err(); err == nil {
		t.Fatal("PING without password succeeded")
	}
	if c.CAFile() == "" {
		t.Fatal("no CA file")
	}
}

func TestACLUser(t *testing.T) {
	c := redistest.Start(t, 1, redistest.User("app", "pw"))
	ctx := ctxT(t)
	if err := c.Node(0).Client().Ping(ctx).Err(); err != nil {
		t.Fatalf("ACL user: %v", err)
	}
	def := redis.NewClient(&redis.Options{Addr: c.Addrs()[0], MaxRetries: -1})
	defer def.Close()
	if err := def.Set(ctx, "x", 1, 0).Err(); err == nil {
		t.Fatal("the default user could write")
	}
}

// TestCloseResumesPausedAndKills checks the cleanup path of New/Close: a
// paused node is resumed and killed, and no process is left behind.
func TestCloseResumesPausedAndKills(t *testing.T) {
	c, err := redistest.New(2)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Node(0).Pause(); err != nil {
		t.Fatal(err)
	}
	pids := []int{c.Node(0).PID(), c.Node(1).PID()}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if processAlive(pid) {
			t.Fatalf("pid %d alive after Close", pid)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestMissingBinary(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := redistest.New(1)
	if !errors.Is(err, redistest.ErrNoServer) {
		t.Fatalf("got %v", err)
	}
	if want := "apt-get install -y redis-server"; !contains(err.Error(), want) {
		t.Fatalf("error %q does not name %q", err, want)
	}
	ft := &fakeTB{}
	func() {
		defer func() { _ = recover() }()
		redistest.Start(ft, 1)
	}()
	if !contains(ft.msg, "apt-get install -y redis-server") {
		t.Fatalf("Start's failure %q does not name the install command", ft.msg)
	}
	if _, err := exec.LookPath("redis-server"); err == nil {
		t.Fatal("PATH override did not hide redis-server")
	}
}

type fakeTB struct{ msg string }

func (f *fakeTB) Helper()        {}
func (f *fakeTB) Cleanup(func()) {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.msg = sprintf(format, args...)
	panic("fatal")
}

func waitPing(t *testing.T, n *redistest.Node) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		err := n.Client().Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s: %v", n.Addr(), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	return p.Signal(syscall.Signal(0)) == nil
}

// A Redis Cluster endpoint per Redlock node: every shard serves the keys
// ShardOf gives it, and a key of another shard is redirected.
func TestShards(t *testing.T) {
	s := redistest.StartShards(t, 2, 3)
	ctx := ctxT(t)
	if len(s.Seeds()) != 2 || s.Seeds()[0] == s.Seeds()[1] {
		t.Fatalf("seeds %v", s.Seeds())
	}
	for _, c := range s.Nodes() {
		if len(c.Nodes()) != 3 {
			t.Fatalf("%d shards", len(c.Nodes()))
		}
		for tag := range 12 {
			key := fmt.Sprintf("p:{job%d}:x", tag)
			slot, err := c.Node(0).Client().ClusterKeySlot(ctx, key).Result()
			if err != nil || int(slot) != redistest.KeySlot(key) {
				t.Fatalf("%s: CLUSTER KEYSLOT %d %v, KeySlot %d", key, slot, err, redistest.KeySlot(key))
			}
			for i, n := range c.Nodes() {
				err := n.Client().Set(ctx, key, 1, 0).Err()
				if mine := i == redistest.ShardOf(key, 3); mine != (err == nil) {
					t.Fatalf("%s (slot %d) on shard %d: %v", key, slot, i, err)
				}
			}
		}
	}
}

// PauseWrites holds writes and scripts, not reads, until the pause ends,
// and then applies what it held.
func TestPauseWrites(t *testing.T) {
	c := redistest.Start(t, 1)
	n := c.Node(0)
	ctx := ctxT(t)
	if err := n.Client().Set(ctx, "k", "before", 0).Err(); err != nil {
		t.Fatal(err)
	}
	const pause = 600 * time.Millisecond
	start := time.Now()
	if err := n.PauseWrites(pause); err != nil {
		t.Fatal(err)
	}
	if v, err := n.Client().Get(ctx, "k").Result(); err != nil || v != "before" {
		t.Fatalf("GET during the pause: %q %v", v, err)
	}
	if d := time.Since(start); d > pause/2 {
		t.Fatalf("GET during the pause took %v: reads must not wait", d)
	}
	// A script that writes (no no-writes flag) is held like a plain write.
	if err := n.Client().Eval(ctx, "return redis.call('SET', KEYS[1], ARGV[1])", []string{"k"}, "during").Err(); err != nil {
		t.Fatalf("EVAL after the pause: %v", err)
	}
	if d := time.Since(start); d < pause-50*time.Millisecond {
		t.Fatalf("a write script ran %v into a %v write pause", d, pause)
	}
	if v, err := n.Client().Get(ctx, "k").Result(); err != nil || v != "during" {
		t.Fatalf("the held write was not applied: %q %v", v, err)
	}
	if err := n.PauseWrites(0); err == nil {
		t.Fatal("PauseWrites(0): no error")
	}
}
