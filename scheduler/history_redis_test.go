package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redistest"
	"github.com/slotlock/slotlock/locking/redlock"
	"github.com/slotlock/slotlock/scheduler/history"
)

// TestRedisHistoryEveryOutcomeKind: one replica over three real nodes
// runs jobs that succeed, fail, time out, skip for overlap, and one whose
// slot a dead replica had claimed: each outcome kind reaches the history
// with its reason (paused and missed: TestRedisReconcileAccountsForEverySlot).
func TestRedisHistoryEveryOutcomeKind(t *testing.T) {
	needRedis(t)
	t.Parallel()
	nodes := redistest.Start(t, 3)
	sink := &logSink{}
	newLocker := func(replica string) locking.Locker {
		l, err := redlock.New(redlock.Config{Nodes: nodes.Addrs()}, locking.Options{Replica: replica})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		return l
	}
	// A replica that claims slot T of "dead", starts its run (confirmed by
	// a renewal) and dies: its lease expires before T, and whoever claims
	// T next takes it over as abandoned. The same replica claims slot T of
	// "limbo" and dies before confirming a start: taken over, it is missed
	// (unknown), may have started.
	dead := newLocker("ghost")
	deadSlot := time.Now().Truncate(time.Second).Add(2 * time.Second)
	lease, err := dead.Claim(context.Background(), history.SlotKey("dead", deadSlot), 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	lease.Start()
	if err := lease.Extend(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := dead.Claim(context.Background(), history.SlotKey("limbo", deadSlot), 500*time.Millisecond); err != nil {
		t.Fatal(err)
	}

	ok, bad, slow, hog, ghost, limbo := &recorder{now: time.Now}, &recorder{now: time.Now}, &recorder{now: time.Now, d: 2 * time.Second},
		&recorder{now: time.Now, d: 2500 * time.Millisecond}, &recorder{now: time.Now}, &recorder{now: time.Now}
	bad.fail.Store(1000)
	slowSpec := everySecond(t, "slow", slow)
	slowSpec.Timeout = 300 * time.Millisecond
	hogSpec := everySecond(t, "hog", hog)
	hogSpec.Overlap = OverlapForbid
	l := newLocker("r1")
	s, err := New(Config{Replica: "r1", Locker: l, Logger: sink.logger("r1"), MaxClockSkew: 200 * time.Millisecond,
		LockTTL: 2 * time.Second, ShutdownGrace: 3 * time.Second,
		Jobs: []JobSpec{everySecond(t, "ok", ok), everySecond(t, "bad", bad), slowSpec, hogSpec, everySecond(t, "dead", ghost),
			everySecond(t, "limbo", limbo)}})
	if err != nil {
		t.Fatal(err)
	}
	stop := running(t, s)
	time.Sleep(5 * time.Second)
	stop()

	want := map[string]struct {
		outcome history.Outcome
		reason  history.Reason
	}{
		"ok":    {history.OutcomeSucceeded, ""},
		"bad":   {history.OutcomeFailed, ""},
		"slow":  {history.OutcomeCanceled, history.ReasonTimeout},
		"hog":   {history.OutcomeSkipped, history.ReasonOverlap},
		"dead":  {history.OutcomeAbandoned, ""},
		"limbo": {history.OutcomeMissed, history.ReasonUnknown},
	}
	for job, w := range want {
		h, err := history.ReadEntries(context.Background(), l, job, time.Time{}, 100)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range h {
			if e.Outcome == w.outcome && e.Reason == w.reason {
				found = true
				switch e.Outcome {
				case history.OutcomeFailed:
					if e.ErrorClass != "error" || e.Attempts != 1 || e.RunID == "" || e.Token == 0 {
						t.Errorf("%s: %+v", job, e)
					}
				case history.OutcomeMissed:
					if e.Slot != slotString(deadSlot) || e.Replica != "ghost" || !e.MayHaveStarted || Backfillable(&e) {
						t.Errorf("%s: %+v, want slot %s held by ghost, may have started, not backfillable", job, e, slotString(deadSlot))
					}
				case history.OutcomeAbandoned:
					if e.Slot != slotString(deadSlot) || e.Replica != "ghost" {
						t.Errorf("%s: %+v, want slot %s held by ghost", job, e, slotString(deadSlot))
					}
				case history.OutcomeSkipped:
					if e.Replica != "r1" {
						t.Errorf("%s: %+v", job, e)
					}
				}
			}
		}
		if !found {
			sink.dump(t)
			t.Errorf("%s: no %s/%s entry in %+v", job, w.outcome, w.reason, h)
		}
	}
	for _, runs := range [][]record{ghost.all(), limbo.all()} {
		for _, r := range runs {
			if r.Run.Slot.Equal(deadSlot) {
				t.Errorf("the abandoned slot %s ran again", slotString(deadSlot))
			}
		}
	}
}
