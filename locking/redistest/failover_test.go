package redistest_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotlock/slotlock/locking/redistest"
)

// A node started from a checkpoint has lost every write after it — a key
// set since is gone, a key deleted since is back, with its TTL's deadline
// — and kept its port; it goes on taking writes after the checkpoint.
func TestCheckpointStartFrom(t *testing.T) {
	c := redistest.Start(t, 1, redistest.AppendOnly())
	n := c.Node(0)
	ctx := ctxT(t)
	cl := n.Client()
	if err := cl.Set(ctx, "kept", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := cl.Set(ctx, "claim", "a", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	cp, err := n.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Set(ctx, "done", "a", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := cl.Del(ctx, "claim").Err(); err != nil {
		t.Fatal(err)
	}

	if err := n.StartFrom(cp); err == nil {
		t.Fatal("StartFrom of a running node: no error")
	}
	port := n.Port()
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := n.StartFrom(cp); err != nil {
		t.Fatal(err)
	}
	waitPing(t, n)
	if n.Port() != port {
		t.Fatalf("port changed across StartFrom: %d -> %d", port, n.Port())
	}
	if v, err := cl.Get(ctx, "kept").Result(); err != nil || v != "1" {
		t.Fatalf("kept: %q, %v; want 1", v, err)
	}
	if err := cl.Get(ctx, "done").Err(); err != redis.Nil {
		t.Fatalf("done (written after the checkpoint): %v, want no key", err)
	}
	ttl, err := cl.PTTL(ctx, "claim").Result()
	if err != nil || ttl <= 0 || ttl > time.Minute {
		t.Fatalf("claim (deleted after the checkpoint) is back with ttl %v (%v), want (0, 1m]", ttl, err)
	}
	if err := cl.Set(ctx, "after", "1", 0).Err(); err != nil {
		t.Fatalf("a write after the rollback: %v", err)
	}

	plain := redistest.Start(t, 1)
	if _, err := plain.Node(0).Checkpoint(); err == nil {
		t.Fatal("Checkpoint of a node without an append-only file: no error")
	}
}
