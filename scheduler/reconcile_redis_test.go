package scheduler

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redistest"
	"github.com/slotlock/slotlock/locking/redlock"
	"github.com/slotlock/slotlock/scheduler/history"
)

// TestRedisReconcileAccountsForEverySlot: three replicas over three real
// nodes run an every-second job; all of them stop for three seconds, come
// back, and the job is paused for two seconds. Afterwards every slot of
// the window has exactly one history entry: ran (succeeded, and the job
// ran it once), skipped for the pause (never missed), or missed — reported
// once fleet-wide as slot.missed, counted once, and, inside the gap,
// with reason no_replica.
func TestRedisReconcileAccountsForEverySlot(t *testing.T) {
	needRedis(t)
	t.Parallel()
	nodes := redistest.Start(t, 3)
	sink := &logSink{}
	job := &ledger{}
	metrics := newCountMetrics()
	const name = "accounted"
	startGen := func(gen int) (stop func()) {
		var stops []func()
		for i := range 3 {
			replica := fmt.Sprintf("g%d-replica-%d", gen, i)
			l, err := redlock.New(redlock.Config{Nodes: nodes.Addrs()},
				locking.Options{Replica: replica, Logger: sink.logger(replica)})
			if err != nil {
				t.Fatal(err)
			}
			s, err := New(Config{Replica: replica, Locker: l, Logger: sink.logger(replica), Metrics: metrics,
				MaxClockSkew: 200 * time.Millisecond, LockTTL: 2 * time.Second, ShutdownGrace: time.Second,
				Beat: 200 * time.Millisecond, ReconcileEvery: 300 * time.Millisecond, ReconcileAfter: time.Second,
				DefinitionsHash: "defs-1", Jobs: []JobSpec{everySecond(t, name, job)}})
			if err != nil {
				t.Fatal(err)
			}
			stopRun := running(t, s)
			stops = append(stops, func() { stopRun(); _ = l.Close() })
		}
		return func() {
			for _, f := range stops {
				f()
			}
		}
	}
	admin, err := redlock.New(redlock.Config{Nodes: nodes.Addrs()}, locking.Options{Replica: "admin"})
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()

	begin := time.Now()
	stop := startGen(1)
	time.Sleep(3 * time.Second)
	stop()
	downFrom := time.Now()
	time.Sleep(3 * time.Second)
	downTo := time.Now()
	stop = startGen(2)
	time.Sleep(1500 * time.Millisecond)
	ctx := context.Background()
	pause, err := admin.SetPause(ctx, name, locking.Pause{Paused: true, Until: time.Now().Add(2 * time.Second), By: "test"})
	if err != nil {
		t.Fatal(err)
	}
	// Long enough for the reconciler to judge the slots up to the pause's
	// end and a few after it.
	time.Sleep(9 * time.Second)
	stop()

	first := begin.Truncate(time.Second).Add(time.Second)
	last := pause.Until.Truncate(time.Second).Add(2 * time.Second)
	hist, err := history.ReadEntries(ctx, admin, name, first, 1000)
	if err != nil {
		t.Fatal(err)
	}
	bySlot := map[string][]history.Entry{}
	for _, e := range hist {
		bySlot[e.Slot] = append(bySlot[e.Slot], e)
	}
	runs := perSlot(job.all())
	evs := sink.events(t)
	missed := 0
	for sl := first; !sl.After(last); sl = sl.Add(time.Second) {
		slot := slotString(sl)
		es := bySlot[slot]
		if len(es) != 1 {
			sink.dump(t)
			t.Fatalf("slot %s: %d history entries %v, want 1", slot, len(es), es)
		}
		e := es[0]
		reports := where(evs, "slot.missed", "slot", slot)
		switch e.Outcome {
		case history.OutcomeSucceeded:
			if runs[sl.Unix()] != 1 || len(reports) != 0 {
				t.Errorf("slot %s: succeeded, but ran %d times and was reported missed %d times", slot, runs[sl.Unix()], len(reports))
			}
		case history.OutcomeSkipped:
			if e.Reason != history.ReasonPaused || !pause.Covers(sl) || runs[sl.Unix()] != 0 || len(reports) != 0 {
				t.Errorf("slot %s: %+v (pause %v..%v), ran %d, reported missed %d", slot, e, pause.Since(), pause.Until, runs[sl.Unix()], len(reports))
			}
		case history.OutcomeMissed:
			missed++
			if runs[sl.Unix()] != 0 || len(reports) != 1 || reports[0].str("reason") != string(e.Reason) {
				t.Errorf("slot %s: missed (%s), but ran %d times; reports %v", slot, e.Reason, runs[sl.Unix()], reports)
			}
			inGap := sl.After(downFrom.Add(time.Second)) && sl.Before(downTo.Add(-time.Second))
			if sl.Before(downFrom) || sl.After(downTo.Add(time.Second)) {
				t.Errorf("slot %s missed outside the gap %v..%v", slot, downFrom, downTo)
			} else if inGap && e.Reason != history.ReasonNoReplica {
				t.Errorf("slot %s, inside the gap: reason %q, want %q", slot, e.Reason, history.ReasonNoReplica)
			}
		default:
			t.Errorf("slot %s: unexpected entry %+v", slot, e)
		}
	}
	if missed < 2 {
		t.Errorf("%d slots missed in a 3 s gap, want at least 2", missed)
	}
	counted := 0
	for _, r := range history.MissedReasons {
		counted += metrics.get(name+"/missed/"+string(r), true)
	}
	for _, e := range where(evs, "slot.missed") {
		t.Logf("slot.missed %s reason %s by %s", e.str("slot"), e.str("reason"), e.str("replica"))
	}
	if counted != missed {
		t.Errorf("slotlock_slots_missed_total counted %d, history has %d missed slots", counted, missed)
	}
	t.Logf("slots %s..%s: %d missed, %d runs", slotString(first), slotString(last), missed, len(job.all()))
}
