package lockingtest

import (
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// clockSlack is what a node's clock may differ from this process's by on
// one host beyond a read's uncertainty: TIME's microseconds, rounding.
const clockSlack = 2 * time.Millisecond

// testReadClocks: a Locker whose stores keep time reads one clock per
// node, each within its uncertainty of this host's clock (the stores
// under test run here); one whose stores share the process's clock reads
// none (Mode "local").
func testReadClocks(t *testing.T, l locking.Locker) {
	cr, ok := l.(locking.ClockReader)
	if !ok {
		t.Skip("the Locker does not read its stores' clocks")
	}
	st, err := l.Ping(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	clocks, err := cr.ReadClocks(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if l.Mode() == "local" {
		if len(clocks) != 0 {
			t.Fatalf("the in-process store read %d clocks; it keeps no time of its own", len(clocks))
		}
		return
	}
	if len(clocks) != len(st) {
		t.Fatalf("%d clocks read for %d nodes", len(clocks), len(st))
	}
	for i, c := range clocks {
		if !c.Read || c.Err != nil || c.Addr != st[i].Addr {
			t.Fatalf("node %d (%s): clock %+v", i, st[i].Addr, c)
		}
		if c.Uncertainty < 0 || c.Offset.Abs() > c.Uncertainty+clockSlack {
			t.Errorf("node %d: offset %v ± %v; the node runs on this host's clock", i, c.Offset, c.Uncertainty)
		}
	}
}
