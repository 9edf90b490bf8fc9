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
