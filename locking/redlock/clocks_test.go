package redlock_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redistest"
	"github.com/slotlock/slotlock/locking/redlock"
)

// ReadClocks measures each node's clock against the locker's own: a node
// whose wall clock is stepped is read that far ahead, and a locker whose
// Clock is offset (SLOTLOCK_CLOCK_OFFSET) reads every node off by as
// much the other way; a node that is down is reported unread, the others
// still read.
func TestReadClocks(t *testing.T) {
	c := redistest.Start(t, 3, redistest.SteppableClocks())
	if err := c.Node(1).StepClock(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	read := func(t *testing.T, replicaOffset time.Duration) []locking.NodeClock {
		t.Helper()
		l, err := redlock.New(redlock.Config{Nodes: c.Addrs(), OpTimeout: 500 * time.Millisecond},
			locking.Options{Replica: "r", Clock: locking.SystemClock(replicaOffset),
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		clocks, err := l.(locking.ClockReader).ReadClocks(ctx)
		if err != nil || len(clocks) != 3 {
			t.Fatalf("ReadClocks: %v, %d clocks", err, len(clocks))
		}
		return clocks
	}
	near := func(t *testing.T, c locking.NodeClock, want time.Duration) {
		t.Helper()
		if !c.Read || c.Err != nil {
			t.Fatalf("%s not read: %v", c.Addr, c.Err)
		}
		if (c.Offset - want).Abs() > c.Uncertainty+100*time.Millisecond {
			t.Errorf("%s: offset %v ± %v, want %v", c.Addr, c.Offset, c.Uncertainty, want)
		}
	}
	t.Run("node stepped", func(t *testing.T) {
		clocks := read(t, 0)
		near(t, clocks[0], 0)
		near(t, clocks[1], 5*time.Second)
		near(t, clocks[2], 0)
	})
	t.Run("replica ahead", func(t *testing.T) {
		clocks := read(t, 3*time.Second)
		near(t, clocks[0], -3*time.Second)
		near(t, clocks[1], 2*time.Second)
		near(t, clocks[2], -3*time.Second)
	})
	t.Run("node down", func(t *testing.T) {
		if err := c.Node(2).Kill(); err != nil {
			t.Fatal(err)
		}
		clocks := read(t, 0)
		near(t, clocks[0], 0)
		if clocks[2].Read || clocks[2].Err == nil {
			t.Fatalf("a killed node's clock read: %+v", clocks[2])
		}
	})
}
