package redlock

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"sync"
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
	// What the shard runs, read as it runs it: the acquisition script's
	// calls told apart from the undo's.
	mon := monitor(t, frozen.Addr())
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
	// acquisition, once. Its undo is written once the shard answers a new
	// connection's handshake (the sender waits releaseWait for it), and may
	// be sent again until the shard answers (undoLater): the acquisition
	// once, its undo once or twice, and the key gone.
	name := driverOf(l).key(locking.Key{Family: fams[1], Name: "b"})
	deadline := time.Now().Add(3 * time.Second)
	for frozen.Client().Exists(ctx, name).Val() != 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Second)
	if v := frozen.Client().Get(ctx, name).Val(); v != "" {
		t.Errorf("the failed acquisition %q is left on the shard", v)
	}
	acquires, releases := 0, 0
	for _, line := range mon() {
		acquires += strings.Count(line, acquireScript.sha.(string)) + strings.Count(line, acquireScript.fold.sha.(string))
		releases += strings.Count(line, releaseScript.sha.(string)) + strings.Count(line, releaseScript.fold.sha.(string))
	}
	if acquires != 1 || releases < 1 {
		t.Errorf("the shard that was frozen ran the acquisition %d times and its undo %d times, want once and at least once", acquires, releases)
	}
	if took > 5*200*time.Millisecond {
		t.Errorf("the acquisition took %v on a frozen shard, more than five op timeouts", took)
	}
}

// monitor streams what the node at addr runs (MONITOR, on a connection of
// its own with no deadline: it outlives a pause of the node), and returns
// the lines read so far.
func monitor(t *testing.T, addr string) func() []string {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lines []string
	sc := bufio.NewScanner(conn)
	if !sc.Scan() || sc.Text() != "+OK" {
		t.Fatalf("MONITOR: %q %v", sc.Text(), sc.Err())
	}
	go func() {
		for sc.Scan() {
			mu.Lock()
			lines = append(lines, sc.Text())
			mu.Unlock()
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), lines...)
	}
}
