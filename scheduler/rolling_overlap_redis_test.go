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
			// Neither side has the other in its view (their definitions
			// differ), so both claim each slot at its due time and the
			// first claim to reach a majority wins. In this process the
			// replica started first wins about two slots of three (40
			// runs under -race), so over 7 slots the one started second
			// won none in about 1 run of 40. Watch until each side has
			// won a slot, at most 20 s: a side that never wins one still
			// fails.
			time.Sleep(6 * time.Second)
			for deadline := time.Now().Add(14 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
				if won := slotsWon(t, sink, rec.all()); won[string(OverlapAllow)] > 0 && won[string(OverlapForbid)] > 0 {
					break
				}
			}
			stopSecond()
			stopFirst()
			checkRollingRuns(t, sink, rec.all())
		})
	}
}
