package locking_test

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/lockingtest"
	"github.com/slotlock/slotlock/locking/redistest"
	"github.com/slotlock/slotlock/locking/redlock"
)

func TestConformanceLocal(t *testing.T) {
	lockingtest.Run(t, func(t *testing.T) locking.Locker {
		l := locking.NewLocal(locking.Options{Replica: "local-1"})
		t.Cleanup(func() { _ = l.Close() })
		return l
	})
}

func TestConformanceRedlock(t *testing.T) {
	c := redistest.Start(t, 3)
	lockingtest.Run(t, func(t *testing.T) locking.Locker {
		l, err := redlock.New(redlock.Config{Nodes: c.Addrs(), OpTimeout: 500 * time.Millisecond},
			locking.Options{Replica: "redlock-1", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		return l
	})
}

// The interleavings, on real Redis: each replica over its own connections.
func TestInterleavingsRedlock(t *testing.T) {
	c := redistest.Start(t, 3)
	lockingtest.RunNodes(t, func(t *testing.T) lockingtest.World {
		return func(string) []driver.Node {
			nodes, err := redlock.RedisNodes(redlock.Config{Nodes: c.Addrs(), OpTimeout: 500 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			return nodes
		}
	})
}

// The suite on Redis Cluster endpoints, 3 nodes × 3 shards, with one
// shard of the first node killed before it starts: a family whose hash
// tag that shard served has lost that node (and, once the other shards
// mark it failed, every family has), so the other two carry the quorum.
// The seed shard stays up, so the node has switched to its cluster client.
func TestConformanceRedlockShards(t *testing.T) {
	s := redistest.StartShards(t, 3, 3)
	if err := s.Node(0).Node(1).Kill(); err != nil {
		t.Fatal(err)
	}
	lockingtest.Run(t, func(t *testing.T) locking.Locker {
		l, err := redlock.New(redlock.Config{Nodes: s.Seeds(), OpTimeout: 500 * time.Millisecond},
			locking.Options{Replica: "redlock-1", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		return l
	})
}
