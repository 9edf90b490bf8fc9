package scheduler

import (
	"context"
	"fmt"
	"github.com/slotlock/slotlock/scheduler/history"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/redlock"
)

// noRecord is a lock store node that never advances a record, alone
// (OpMaxSet) or with a lease's end (OpRelease with a record): replicas on
// it leave the job's "last handled slot" where it was, as replicas killed
// before they wrote it would.
type noRecord struct{ driver.Node }

func (n noRecord) Do(ctx context.Context, op driver.Op) (driver.Result, error) {
	switch o := op.(type) {
	case driver.MaxSetOp:
		return driver.Result{}, nil
	case driver.ReleaseOp:
		o.Record, o.RecordN = "", 0
		op = o
	}
	return n.Node.Do(ctx, op)
}

// noRecordRedlock is a Redlock over nodes whose records never advance
// (noRecord).
func noRecordRedlock(t *testing.T, addrs []string, opt locking.Options) locking.Locker {
	t.Helper()
	nodes, err := redlock.RedisNodes(redlock.Config{Nodes: addrs})
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range nodes {
		nodes[i] = noRecord{n}
	}
	l, err := redlock.OnNodes(nodes, "", 0, opt)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestRedisRunAll: three replicas on three real redis-server nodes run a
// job every 2 s for 9 s (misfire skip: their done markers live 10 s)
// but never write the job's record; then every replica is down for 15 s.
// Three replicas with misfire run_all (max 8) start: their start-up check
// sees every slot since the record as missed. The newest 8 run — oldest
// first, each exactly once, reported as misfire.recovered — except those
// that ran before the gap: their markers have expired, the slot history
// says they ran, and they do not run again. The older ones are logged late.
func TestRedisRunAll(t *testing.T) {
	nodes, sink := realTimeNodes(t)
	job := &ledger{d: 100 * time.Millisecond}
	sched, err := ParseSchedule("*/2 * * * * *", time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	direct, err := redlock.New(redlock.Config{Nodes: nodes.Addrs()}, locking.Options{Replica: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	t0 := time.Now()
	if err := direct.AdvanceRecord(context.Background(), history.LastKey("all"), t0.Unix()); err != nil {
		t.Fatal(err)
	}
	fleet := func(phase string, misfire Misfire) (stop func()) {
		var stops []func()
		for i, off := range itOffsets {
			name := fmt.Sprintf("%s-%d", phase, i)
			clock := locking.SystemClock(off)
			l := noRecordRedlock(t, nodes.Addrs(), locking.Options{Replica: name, Clock: clock, Logger: sink.logger(name)})
			s, err := New(Config{Replica: name, Locker: l, Clock: clock, Logger: sink.logger(name),
				MaxClockSkew: itSkew, LockTTL: 10 * time.Second, ShutdownGrace: 5 * time.Second, ReconcileEvery: -1,
				Jobs: []JobSpec{{Name: "all", Spec: "*/2 * * * * *", Schedule: sched, Job: job, Misfire: misfire}}})
			if err != nil {
				t.Fatal(err)
			}
			stop := running(t, s)
			stops = append(stops, func() { stop(); _ = l.Close() })
		}
		return func() {
			var wg sync.WaitGroup
			for _, s := range stops {
				wg.Go(s)
			}
			wg.Wait()
		}
	}
	stop1 := fleet("before", Misfire{Policy: MisfireSkip})
	time.Sleep(9 * time.Second)
	stop1()
	ranBefore := perSlot(job.all())
	time.Sleep(15 * time.Second)
	start2 := time.Now()
	stop2 := fleet("after", Misfire{Policy: MisfireRunAll, Deadline: time.Minute, Max: 8})
	time.Sleep(16 * time.Second)
	stop2()

	evs := sink.events(t)
	counts := perSlot(job.all())
	for sl, n := range counts {
		if n > 1 {
			sink.dump(t)
			t.Fatalf("slot %s ran %d times", slotString(time.Unix(sl, 0)), n)
		}
	}
	recovered := map[string]int{}
	for _, e := range where(evs, "misfire.recovered") {
		recovered[e.str("slot")]++
	}
	var lastBefore int64
	for sl := range ranBefore {
		lastBefore = max(lastBefore, sl)
		if recovered[slotString(time.Unix(sl, 0))] != 0 {
			t.Errorf("slot %s ran before the gap and was recovered", slotString(time.Unix(sl, 0)))
		}
	}
	if len(ranBefore) < 3 {
		t.Fatalf("only %d slots ran before the gap", len(ranBefore))
	}
	// The gap: every replica was down. Its slots all run (about 6, and
	// max is 8), each through the misfire policy.
	var gap []int64
	for sl := sched.Next(time.Unix(lastBefore, 0)); sl.Before(start2.Add(-itSkew)); sl = sched.Next(sl) {
		gap = append(gap, sl.Unix())
		if counts[sl.Unix()] != 1 || recovered[slotString(sl)] != 1 {
			sink.dump(t)
			t.Fatalf("gap slot %s: ran %d times, recovered %d times; want 1 and 1", slotString(sl), counts[sl.Unix()], recovered[slotString(sl)])
		}
	}
	if len(gap) < 5 {
		t.Fatalf("only %d gap slots", len(gap))
	}
	runs := job.all()
	sort.Slice(runs, func(a, b int) bool { return runs[a].Start.Before(runs[b].Start) })
	var order []int64
	for _, r := range runs {
		if u := r.Run.Slot.Unix(); u >= gap[0] && u <= gap[len(gap)-1] {
			order = append(order, u)
		}
	}
	if !sort.SliceIsSorted(order, func(a, b int) bool { return order[a] < order[b] }) {
		t.Errorf("gap slots ran in the order %v, want oldest first", order)
	}
	// Slots that ran before the gap, among the newest 8: told by the history.
	byHistory := 0
	for _, e := range where(evs, "slot.skipped", "reason", "done") {
		if ts, err := time.Parse(time.RFC3339, e.str("slot")); err == nil && ranBefore[ts.Unix()] > 0 && e.str("outcome") == "succeeded" {
			byHistory++
		}
	}
	if byHistory == 0 {
		sink.dump(t)
		t.Errorf("no slot that ran before the gap was found done through the slot history")
	}
	first := slotString(sched.Next(time.Unix(t0.Unix(), 0)))
	late := where(evs, "slot.skipped", "reason", "late")
	if len(late) == 0 {
		t.Errorf("the slots beyond max were not logged late")
	}
	for _, l := range late {
		if l.str("first_slot") != first && l.str("slot") != first {
			t.Errorf("late line %v, want it to start at %s", l, first)
		}
	}
	t.Logf("%d slots before the gap, %d in it; %d found done through the history", len(ranBefore), len(gap), byHistory)
}
