package redistest_test

import (
	"context"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking/redistest"
)

// A stepped node sees its wall clock moved: TIME answers the step, a key
// whose expiry the step passes is gone at once, and the real clock again
// keeps the keys set meanwhile until their time.
func TestStepClock(t *testing.T) {
	c := redistest.Start(t, 1, redistest.SteppableClocks())
	n := c.Node(0)
	ctx := context.Background()
	rc := n.Client()
	offset := func() time.Duration {
		t.Helper()
		now, err := rc.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		return now.Sub(time.Now())
	}
	if d := offset(); d.Abs() > 100*time.Millisecond {
		t.Fatalf("an unstepped node's clock is off by %v", d)
	}
	if err := rc.Set(ctx, "short", "v", 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.Set(ctx, "long", "v", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := n.StepClock(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	if d := offset(); d < 19*time.Second || d > 21*time.Second {
		t.Fatalf("stepped 20s forward, TIME is %v ahead", d)
	}
	if got, _ := rc.Exists(ctx, "short", "long").Result(); got != 1 {
		t.Fatalf("after a 20s step, %d of the 10s and 60s keys exist, want the 60s one only", got)
	}
	if ttl, _ := rc.PTTL(ctx, "long").Result(); ttl > 41*time.Second {
		t.Fatalf("the 60s key has %v left after a 20s step", ttl)
	}
	if err := rc.Set(ctx, "set-ahead", "v", 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if err := n.StepClock(0); err != nil {
		t.Fatal(err)
	}
	if d := offset(); d.Abs() > 100*time.Millisecond {
		t.Fatalf("stepped back, the clock is still off by %v", d)
	}
	if ttl, _ := rc.PTTL(ctx, "set-ahead").Result(); ttl < 29*time.Second {
		t.Fatalf("a 10s key set 20s ahead has %v left after the step back, want about 30s", ttl)
	}
	// Restarted, the node keeps its shim.
	if err := n.StepClock(-5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := n.Restart(); err != nil {
		t.Fatal(err)
	}
	if d := offset(); d > -4*time.Second || d < -6*time.Second {
		t.Fatalf("restarted 5s behind, TIME is %v off", d)
	}
}

// A node started without SteppableClocks says so rather than pretend.
func TestStepClockNeedsOption(t *testing.T) {
	c := redistest.Start(t, 1)
	if err := c.Node(0).StepClock(time.Second); err == nil {
		t.Fatal("StepClock on a node without the shim succeeded")
	}
}
