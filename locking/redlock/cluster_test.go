package redlock

import (
	"fmt"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redistest"
)

// On a cluster endpoint too, a call is sent once: the quorum is the retry.
// go-redis's cluster client, left to its defaults, sends a pipeline whose
// answer timed out again (up to three more times, with a backoff, on the
// shard or on another that redirects it back), so an acquisition on a
// frozen shard took 3.2 s with a 200 ms op timeout; on a frozen
// standalone node it takes about three op timeouts (its rounds), and so
// it must here.
func TestRedlockClusterSendsOnce(t *testing.T) {
	c := redistest.StartShards(t, 1, 2).Node(0)
	ctx := tctx(t, 20*time.Second)
	l := newTestRedlock(t, []string{c.Node(0).Addr()}, "me", func(cfg *Config) { cfg.OpTimeout = 200 * time.Millisecond })
	// A family on each shard: the node switches to its cluster client.
	fams := map[int]string{}
	for i := 0; len(fams) < 2; i++ {
		fams[redistest.ShardOf(fmt.Sprint("f", i), 2)] = fmt.Sprint("f", i)
	}
	for _, fam := range fams {
		lease, err := l.Acquire(ctx, locking.Key{Family: fam, Name: "a"}, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if err := lease.End(ctx, locking.Ending{}).Err; err != nil {
			t.Fatal(err)
		}
	}
	if !driverOf(l).nodes[0].(*redisNode).cluster.Load() {
		t.Fatal("node did not switch to a cluster client")
	}
	frozen := c.Node(1)
	before := scriptCalls(t, frozen.Client())
	if err := frozen.Pause(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := l.Acquire(ctx, locking.Key{Family: fams[1], Name: "b"}, 5*time.Second)
	took := time.Since(start)
	if err := frozen.Resume(); err != nil {
		t.Fatal(err)
	}
	if err == nil {
		t.Fatal("acquired on a frozen shard")
	}
	// The shard runs what its socket buffers hold once it wakes: the
	// acquisition, once. Its undo, queued behind it, was never written (no
	// new connection can be set up with a frozen shard); it is sent again
	// until the shard answers, once more: two script calls in all.
	name := driverOf(l).key(locking.Key{Family: fams[1], Name: "b"})
	deadline := time.Now().Add(3 * time.Second)
	for frozen.Client().Exists(ctx, name).Val() != 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	if v := frozen.Client().Get(ctx, name).Val(); v != "" {
		t.Errorf("the failed acquisition %q is left on the shard", v)
	}
	if after := scriptCalls(t, frozen.Client()); after-before != 2 {
		t.Errorf("the shard that was frozen ran %d script calls, want 2 (the acquisition once, its undo once)", after-before)
	}
	if took > 5*200*time.Millisecond {
		t.Errorf("the acquisition took %v on a frozen shard, more than five op timeouts", took)
	}
}
