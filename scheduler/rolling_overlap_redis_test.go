package scheduler

import (
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redlock"
)

// TestRedisRollingChangeOfOverlap is TestRollingChangeFromAllowAllowSideWaits
// over three real Redis nodes, in real time: an every-second job with a
// 1.6 s body, a replica under allow and one under forbid, in both orders
// of start; a run under forbid never goes on beside another run.
func TestRedisRollingChangeOfOverlap(t *testing.T) {
	nodes, _ := realTimeNodes(t)
	for _, first := range []Overlap{OverlapAllow, OverlapForbid} {
		t.Run("first "+string(first), func(t *testing.T) {
			rec, sink := &recorder{d: 1600 * time.Millisecond, now: time.Now}, &logSink{}
			mk := func(o Overlap) *Scheduler {
				name := string(o)
				l, err := redlock.New(redlock.Config{Nodes: nodes.Addrs(), KeyPrefix: "roll-" + string(first)},
					locking.Options{Replica: name, Logger: sink.logger(name)})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Close() })
				sp := everySecond(t, "j", rec)
				sp.Overlap = o
				s, err := New(Config{Replica: name, Locker: l, Logger: sink.logger(name), MaxClockSkew: itSkew,
					LockTTL: 10 * time.Second, ShutdownGrace: 5 * time.Second, Beat: time.Second, Jobs: []JobSpec{sp}})
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			second := map[Overlap]Overlap{OverlapAllow: OverlapForbid, OverlapForbid: OverlapAllow}[first]
			stopFirst := running(t, mk(first))
			time.Sleep(1200 * time.Millisecond)
			stopSecond := running(t, mk(second))
			time.Sleep(6 * time.Second)
			stopSecond()
			stopFirst()
			checkRollingRuns(t, sink, rec.all())
		})
	}
}
