package redlock

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redistest"
)

// Nodes down, coming up, slow: what the lock layer does and says.

func TestRedlockOneNodeDownStillLocks(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 10*time.Second)
	l := newTestRedlock(t, c.Addrs(), "me")
	if err := c.Node(1).Kill(); err != nil {
		t.Fatal(err)
	}
	lease, err := l.Acquire(ctx, locking.Key{Family: "job", Name: "x"}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.Extend(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lease.End(ctx, locking.Ending{}).Err; err != nil {
		t.Fatal(err)
	}
	st, err := l.Ping(ctx)
	if err != nil || len(st) != 3 || st[1].Up || !st[0].Up || st[1].Addr != c.Node(1).Addr() {
		t.Fatalf("ping: %v %+v", err, st)
	}

	// A frozen node (connections open, no answers) costs one op timeout
	// per round, not a TTL.
	if err := c.Node(1).Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Ping(ctx); err != nil { // open connections to all three
		t.Fatal(err)
	}
	if err := c.Node(2).Pause(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	lease, err = l.Acquire(ctx, locking.Key{Family: "job", Name: "y"}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*testOpTimeout {
		t.Fatalf("acquire with a frozen node took %v", took)
	}
	if err := lease.End(ctx, locking.Ending{}).Err; err != nil {
		t.Fatal(err)
	}
	if err := c.Node(2).Resume(); err != nil {
		t.Fatal(err)
	}
}

func TestRedlockTwoNodesDownFailsFast(t *testing.T) {
	for _, fault := range []string{"killed", "paused"} {
		t.Run(fault, func(t *testing.T) {
			c := redistest.Start(t, 3)
			ctx := tctx(t, 10*time.Second)
			l := newTestRedlock(t, c.Addrs(), "me")
			// Warm the connections so a paused node holds open sockets.
			if _, err := l.Ping(ctx); err != nil {
				t.Fatal(err)
			}
			for _, i := range []int{1, 2} {
				var err error
				if fault == "killed" {
					err = c.Node(i).Kill()
				} else {
					err = c.Node(i).Pause()
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			start := time.Now()
			_, err := l.Acquire(ctx, locking.Key{Family: "job", Name: "x"}, 10*time.Second)
			took := time.Since(start)
			var qe *locking.QuorumError
			if !errors.As(err, &qe) || !errors.Is(err, locking.ErrNoQuorum) || qe.Need != 2 || qe.Got != 1 || qe.Op != "acquire" {
				t.Fatalf("got %v", err)
			}
			for _, i := range []int{1, 2} {
				if !strings.Contains(err.Error(), c.Node(i).Addr()) {
					t.Fatalf("error does not name %s: %v", c.Node(i).Addr(), err)
				}
			}
			var ne *locking.NodeError
			if !errors.As(err, &ne) {
				t.Fatalf("no NodeError in %v", err)
			}
			// Acquire + undo: two rounds, each bounded by one op timeout.
			if took > 10*testOpTimeout {
				t.Fatalf("took %v, more than a few op timeouts", took)
			}
			// Node 0 kept nothing.
			if c.Node(0).Client().Exists(ctx, "t:{job}:x").Val() != 0 {
				t.Fatal("node 0 kept the write")
			}
			if _, err := l.Ping(ctx); !errors.Is(err, locking.ErrNoQuorum) {
				t.Fatalf("ping: %v", err)
			}
		})
	}
}

// New does not fail while the nodes are down; it works once they
// are up.
func TestRedlockStartsDuringOutage(t *testing.T) {
	c := redistest.Start(t, 3)
	for _, n := range c.Nodes() {
		if err := n.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	ctx := tctx(t, 15*time.Second)
	l := newTestRedlock(t, c.Addrs(), "me")
	if _, err := l.Acquire(ctx, locking.Key{Family: "f", Name: "n"}, time.Second); !errors.Is(err, locking.ErrNoQuorum) {
		t.Fatalf("during outage: %v", err)
	}
	for _, n := range c.Nodes() {
		if err := n.Start(); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var lease *locking.Lease
		if lease, err = l.Acquire(ctx, locking.Key{Family: "f", Name: "n"}, time.Second); err == nil {
			lease.End(ctx, locking.Ending{})
			return
		}
	}
	t.Fatalf("still failing after the nodes came back: %v", err)
}

// A node going down and coming back is logged once each way, with its
// address and never the password.
func TestRedlockLogsNodeTransitions(t *testing.T) {
	c := redistest.Start(t, 3, redistest.Password("hunter2-secret"))
	ctx := tctx(t, 15*time.Second)
	var buf syncBuf
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	l, err := newLocker(Config{Nodes: c.Addrs(), Password: "hunter2-secret", OpTimeout: testOpTimeout}, locking.Options{Replica: "me", Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	down := c.Node(1)
	if err := down.Kill(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		lease, err := l.Acquire(ctx, locking.Key{Family: "log", Name: "k"}, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		lease.End(ctx, locking.Ending{})
	}
	if n := strings.Count(buf.String(), "redis node unreachable"); n != 1 {
		t.Fatalf("unreachable logged %d times:\n%s", n, buf.String())
	}
	if !strings.Contains(buf.String(), down.Addr()) {
		t.Fatalf("log does not name %s:\n%s", down.Addr(), buf.String())
	}
	if err := down.Start(); err != nil {
		t.Fatal(err)
	}
	// The node is back when it takes a write again (a PING is answered by
	// a node whose writes are paused too): a lease, as a replica's next
	// slot would take.
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(buf.String(), "reachable again"); {
		if time.Now().After(deadline) {
			t.Fatalf("recovery not logged:\n%s", buf.String())
		}
		lease, err := l.Acquire(ctx, locking.Key{Family: "log", Name: "k"}, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		lease.End(ctx, locking.Ending{})
		time.Sleep(50 * time.Millisecond)
	}
	if strings.Contains(buf.String(), "hunter2") {
		t.Fatalf("the password leaked into the log:\n%s", buf.String())
	}
}

// An acquisition that used up its validity on the way is reported as such
// (ErrSlowAcquire), not as a held key or a missing quorum.
func TestRedlockSlowAcquireHasItsOwnError(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := tctx(t, 10*time.Second)
	l := newTestRedlock(t, c.Addrs(), "a")
	driverOf(l).hookBeforeFence = func(locking.Key) { time.Sleep(300 * time.Millisecond) }
	// Counters that differ between the nodes force the write-back round,
	// which the hook slows past the 200ms TTL.
	c.Node(1).Client().Set(ctx, "t:{slow}:fence", 3, 0)
	c.Node(2).Client().Set(ctx, "t:{slow}:fence", 5, 0)
	_, err := l.Acquire(ctx, locking.Key{Family: "slow", Name: "k"}, 200*time.Millisecond)
	if !errors.Is(err, locking.ErrSlowAcquire) || errors.Is(err, locking.ErrNoQuorum) {
		t.Fatalf("err = %v, want ErrSlowAcquire", err)
	}
	for _, n := range c.Nodes() {
		if v := n.Client().Get(ctx, rkey(locking.Key{Family: "slow", Name: "k"})).Val(); v != "" {
			t.Fatalf("node %s kept %q after the undone acquisition", n.Addr(), v)
		}
	}
}
