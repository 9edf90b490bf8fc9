package redlock

import (
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking/redistest"
)

// CheckEviction reads each node's maxmemory-policy: noeviction (Redis's
// default) is safe, any other policy is reported as it is, and a node that
// refuses CONFIG (as managed Redis does) is reported unread, not failed.
func TestCheckEviction(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 10*time.Second)
	if err := c.Node(1).Client().ConfigSet(ctx, "maxmemory-policy", "volatile-lru").Err(); err != nil {
		t.Fatal(err)
	}
	got := CheckEviction(ctx, Config{Nodes: c.Addrs()})
	if len(got) != 3 {
		t.Fatalf("%d answers, want 3: %+v", len(got), got)
	}
	for i, want := range []string{NoEviction, "volatile-lru", NoEviction} {
		if got[i].Addr != c.Addrs()[i] || got[i].Policy != want || got[i].Err != nil || got[i].Safe() != (want == NoEviction) {
			t.Errorf("node %d: %+v, want policy %s", i, got[i], want)
		}
	}

	refusing := redistest.Start(t, 1, redistest.Args("--rename-command", "CONFIG", ""))
	got = CheckEviction(ctx, Config{Nodes: refusing.Addrs()})
	if len(got) != 1 || got[0].Err == nil || got[0].Safe() {
		t.Errorf("CONFIG refused: %+v, want an unread policy", got)
	}
	if CheckEviction(ctx, Config{}) != nil {
		t.Error("no nodes configured: nothing to check")
	}
}
