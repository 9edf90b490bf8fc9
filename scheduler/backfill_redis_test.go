package scheduler

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redlock"
	"github.com/slotlock/slotlock/scheduler/history"
)

// TestRedisBackfillRunSlot: the scheduler's backfill API on three real
// nodes. A replica runs a job every second for 4 s, one slot's run taking
// 25 s, and stops (that run goes on: its claim is open). A backfill of the
// window (10 s later) then plans: the slots that ran are skipped with their outcome,
// the long one as running, a slot with a missed entry and the slots of
// the gap are run, a slot skipped for overlap is not. RunSlot runs each
// once, under its nominal slot, and refuses the ones handled meanwhile;
// a second plan has nothing to run.
func TestRedisBackfillRunSlot(t *testing.T) {
	nodes, sink := realTimeNodes(t)
	sched, _ := ParseSchedule("* * * * * *", time.UTC)
	start := time.Now()
	long := sched.Next(start.Add(time.Second))
	var mu sync.Mutex
	var runs []jobs.Run
	job := funcJob(func(ctx context.Context, run jobs.Run) error {
		d := 20 * time.Millisecond
		if run.Slot.Equal(long) {
			d = 25 * time.Second
		}
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return ctx.Err()
		}
		mu.Lock()
		runs = append(runs, run)
		mu.Unlock()
		return nil
	})
	mk := func(name string) (*Scheduler, locking.Locker) {
		l, err := redlock.New(redlock.Config{Nodes: nodes.Addrs()}, locking.Options{Replica: name, Logger: sink.logger(name)})
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(Config{Replica: name, Locker: l, Logger: sink.logger(name), LockTTL: 2 * time.Second,
			MaxClockSkew: 500 * time.Millisecond, ShutdownGrace: 30 * time.Second, ReconcileEvery: -1, ReconcileAfter: time.Second,
			Jobs: []JobSpec{{Name: "bf", Spec: "* * * * * *", Schedule: sched, Job: job, Overlap: OverlapAllow}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		return s, l
	}
	rep, _ := mk("replica")
	stopRep := running(t, rep)
	time.Sleep(4 * time.Second)
	stopped := make(chan struct{})
	go func() { stopRep(); close(stopped) }() // waits for the long run
	time.Sleep(10 * time.Second)

	bf, l := mk("backfill")
	after := bf.BackfillAfter("bf")
	if after < 4*time.Second || after > 5*time.Second {
		t.Fatalf("BackfillAfter %v", after)
	}
	ranByReplica := map[int64]bool{}
	mu.Lock()
	for _, r := range runs {
		ranByReplica[r.Slot.Unix()] = true
	}
	mu.Unlock()
	from, to := start.Truncate(time.Second), time.Now().Add(-after)
	// Two slots of the gap get entries: one missed (the reconciler's
	// verdict: still to run), one skipped for overlap (a policy's: not).
	var gap []time.Time
	for sl := sched.Next(from.Add(-time.Nanosecond)); !sl.After(to); sl = sched.Next(sl) {
		if !ranByReplica[sl.Unix()] && !sl.Equal(long) {
			gap = append(gap, sl)
		}
	}
	if len(gap) < 4 {
		t.Fatalf("gap %v", gap)
	}
	missed, overlap := gap[0], gap[1]
	ctx := context.Background()
	for _, e := range []history.Entry{missedEntry(missed, history.ReasonNoReplica),
		{Slot: slotString(overlap), Outcome: history.OutcomeSkipped, Reason: history.ReasonOverlap}} {
		at, _ := time.Parse(time.RFC3339, e.Slot)
		if err := l.AppendLog(ctx, "bf", locking.LogAppend{Entry: e.LogEntry(at), Keep: DefaultHistoryKeep}); err != nil {
			t.Fatal(err)
		}
	}

	plan, err := bf.PlanBackfill(ctx, "bf", from, to)
	if err != nil {
		t.Fatal(err)
	}
	var toRun []time.Time
	for _, b := range plan {
		want, why := true, "no outcome"
		switch {
		case b.Slot.Equal(long):
			want, why = false, "running"
		case ranByReplica[b.Slot.Unix()]:
			want, why = false, "succeeded"
		case b.Slot.Equal(missed):
			why = "missed (no_replica)"
		case b.Slot.Equal(overlap):
			want, why = false, "skipped (overlap)"
		}
		if b.Run != want || b.Why != why {
			t.Errorf("plan: %s run=%v %q, want run=%v %q", slotString(b.Slot), b.Run, b.Why, want, why)
		}
		if b.Run {
			toRun = append(toRun, b.Slot)
		}
	}
	for _, sl := range toRun {
		h, err := bf.RunSlot(ctx, "bf", sl)
		if err != nil || h.Outcome != history.OutcomeSucceeded || h.Replica != "backfill" {
			t.Errorf("RunSlot %s: %+v %v", slotString(sl), h, err)
		}
	}
	// Handled since: one just run (its marker), the long run (its claim
	// open), the slots that ran long enough ago for their markers to be
	// gone (the history).
	var he *HandledError
	if _, err := bf.RunSlot(ctx, "bf", toRun[len(toRun)-1]); !errors.As(err, &he) || (he.Reason != string(history.ReasonDone) && he.Reason != "succeeded") {
		t.Errorf("RunSlot of a slot just backfilled: %v", err)
	} else {
		t.Logf("RunSlot of a slot just backfilled: %v", err)
	}
	if _, err := bf.RunSlot(ctx, "bf", long); !errors.As(err, &he) || he.Reason != "running" {
		t.Errorf("RunSlot of the running slot: %v", err)
	}
	for sl := range ranByReplica {
		if _, err := bf.RunSlot(ctx, "bf", time.Unix(sl, 0)); !errors.As(err, &he) || he.Reason != "succeeded" || he.Entry == nil {
			t.Errorf("RunSlot of a slot that ran: %v", err)
		}
	}
	if _, err := bf.RunSlot(ctx, "bf", time.Now().Truncate(time.Second)); !errors.Is(err, ErrBackfillWindow) {
		t.Errorf("RunSlot of a recent slot: %v", err)
	}
	if _, err := bf.RunSlot(ctx, "bf", toRun[0].Add(500*time.Millisecond)); !errors.Is(err, ErrBackfillWindow) {
		t.Errorf("RunSlot of a time that is no slot: %v", err)
	}
	<-stopped
	plan, err = bf.PlanBackfill(ctx, "bf", from, to)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range plan {
		if b.Run {
			t.Errorf("second plan runs %s (%s)", slotString(b.Slot), b.Why)
		}
		if b.Slot.Equal(long) && b.Why != "succeeded" {
			t.Errorf("the long slot after its end: %q", b.Why)
		}
	}
	count := map[int64]int{}
	mu.Lock()
	for _, r := range runs {
		count[r.Slot.Unix()]++
	}
	mu.Unlock()
	for sl := sched.Next(from.Add(-time.Nanosecond)); !sl.After(to); sl = sched.Next(sl) {
		want := 1
		if sl.Equal(overlap) {
			want = 0
		}
		if count[sl.Unix()] != want {
			sink.dump(t)
			t.Errorf("slot %s ran %d times, want %d", slotString(sl), count[sl.Unix()], want)
		}
	}
	evs := sink.events(t)
	if st := where(evs, "run.started", "replica", "backfill"); len(st) != len(toRun) || st[0]["backfill"] != true {
		t.Errorf("backfill run.started lines: %v", st)
	}
	// A slot with no entry is judged missed by the backfill, before its
	// run (a reconciler's pass may be judging it too): one slot.missed,
	// then run.started. The slot with the reconciler's entry gets none.
	for _, sl := range toRun {
		var order []string
		for _, e := range evs {
			if e.str("slot") == slotString(sl) && (e.str("event") == evSlotMissed || e.str("event") == "run.started") {
				order = append(order, e.str("event")+" "+e.str("note"))
			}
		}
		want := []string{evSlotMissed + " " + judgedByBackfill, "run.started "}
		if sl.Equal(missed) {
			want = want[1:]
		}
		if !slices.Equal(order, want) {
			t.Errorf("slot %s: lines %q, want %q", slotString(sl), order, want)
		}
	}
}
