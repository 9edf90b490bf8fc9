package scheduler

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"
)

// TestFleetAloneRanksOverItsView: three fleets built alone, each over the
// same view of the others (a fake read): for every slot their ranks are
// 0, 1 and 2, once each; the first Candidates try it at once or Spread
// apart, the rest are fallbacks. Without a view every replica is a
// candidate.
func TestFleetAloneRanksOverItsView(t *testing.T) {
	names := []string{"r1", "r2", "r3"}
	locker := newEnv(t).locker
	var fleets []*fleet
	for _, n := range names {
		f := newFleet(testEngine(t, Config{Replica: n, Locker: locker, Spread: 100 * time.Millisecond, Candidates: 2}))
		if r := f.slotRank("tick", bubbleStart); r != noRank {
			t.Fatalf("%s: rank %d before any view, want noRank", n, r)
		}
		f.viewSource = func() []string { return slices.DeleteFunc(slices.Clone(names), func(m string) bool { return m == n }) }
		f.refreshView()
		fleets = append(fleets, f)
	}
	for i := range 50 {
		slot := bubbleStart.Add(time.Duration(i) * time.Second)
		var ranks []int
		fallbacks := 0
		for _, f := range fleets {
			ranks = append(ranks, f.slotRank("tick", slot))
			d, role := f.slotDelay("tick", slot)
			if role == roleFallback {
				fallbacks++
				if d != f.fallback {
					t.Errorf("slot %v: a fallback waits %v, want %v", slot, d, f.fallback)
				}
			}
		}
		slices.Sort(ranks)
		if !slices.Equal(ranks, []int{0, 1, 2}) || fallbacks != 1 {
			t.Fatalf("slot %v: ranks %v, %d fallbacks; want 0, 1, 2 and one fallback", slot, ranks, fallbacks)
		}
	}
}

// TestFleetAloneBeats: a fleet's heartbeat names its replica and lists the
// runs going on there; a run that ended leaves the list.
func TestFleetAloneBeats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newEnv(t)
		ctx := context.Background()
		f := newFleet(testEngine(t, Config{Replica: "r1", Locker: env.locker, Beat: time.Second}))
		f.runStarted(history.RunInfo{Job: "tick", RunID: "run-1", Replica: "r1", Since: time.Now()})
		info := history.ReplicaInfo{Replica: "r1", Instance: f.instanceID(), Beat: time.Second.String()}
		prev := f.beat(info, "")
		if prev == "" {
			t.Fatal("the heartbeat listed no run going on")
		}
		alive, err := history.ReadAlive(ctx, env.locker, time.Now().Add(-time.Minute), time.Now())
		if err != nil || len(alive) != 1 || alive[0].Replica != "r1" {
			t.Fatalf("alive %+v (%v), want r1", alive, err)
		}
		f.runEnded("run-1")
		if got := f.runningNow(); len(got) != 0 {
			t.Errorf("runs going on after the end: %+v", got)
		}
		if prev = f.beat(info, prev); prev != "" {
			t.Errorf("the heartbeat after the run ended still lists %q", prev)
		}
	})
}
