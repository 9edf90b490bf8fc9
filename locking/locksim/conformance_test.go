package locksim_test

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/lockingtest"
	"github.com/slotlock/slotlock/locking/locksim"
	"github.com/slotlock/slotlock/locking/redlock"
)

// The simulated stores must behave as real Redis does under the scripts:
// the same conformance suite runs against both (locking's
// TestConformanceRedlock), here on virtual time.
func TestConformanceSimulated(t *testing.T) {
	lockingtest.RunSynctest(t, func(t *testing.T) locking.Locker {
		net := locksim.NewNet(1, locksim.NewStore("sim-a"), locksim.NewStore("sim-b"), locksim.NewStore("sim-c"))
		l, err := redlock.OnNodes(net.Nodes("sim-1", locksim.NewGate(0)), "t", 100*time.Millisecond,
			locking.Options{Replica: "sim-1", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		return l
	})
}

// The interleavings, on simulated stores, on virtual time.
func TestInterleavingsSimulated(t *testing.T) {
	lockingtest.RunNodesSynctest(t, func(t *testing.T) lockingtest.World {
		net := locksim.NewNet(1, locksim.NewStore("sim-a"), locksim.NewStore("sim-b"), locksim.NewStore("sim-c"))
		return func(replica string) []driver.Node { return net.Nodes(replica, locksim.NewGate(0)) }
	})
}
