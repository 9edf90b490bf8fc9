package scheduler

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// TestPauseResumedBeforeAnyReplicaIsNotMissed: the job is paused and
// resumed while no replica fires it, so no entry says its slots were
// paused. The reconciler judges the slots due during the pause skipped
// (paused), not missed; PlanBackfill and RunSlot refuse them ("paused"),
// and run the slots before and after the pause. (The register held only
// the resume, and the reconciler reported those slots missed:
// backfillable, though the operator paused them.)
func TestPauseResumedBeforeAnyReplicaIsNotMissed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, s, rec := backfillEnv(t, OverlapForbid, 50)
		ctx := context.Background()
		j, _ := s.job("bf")
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
		from := time.Now()
		if _, err := e.locker.SetPause(ctx, "bf", locking.Pause{Paused: true, By: "ops"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		if _, err := e.locker.SetPause(ctx, "bf", locking.Pause{By: "ops"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Second)

		var slots []time.Time
		for i := -2; i < 8; i++ {
			slots = append(slots, from.Add(time.Duration(i)*time.Second))
		}
		// Before the reconciler's entries, the register alone refuses them.
		plan, err := s.PlanBackfill(ctx, "bf", slots[0], slots[len(slots)-1])
		if err != nil {
			t.Fatal(err)
		}
		for i, b := range plan {
			if paused := i >= 2 && i < 7; b.Run == paused || (paused && b.Why != "paused") {
				t.Errorf("plan of %s (+%ds): run %v why %q", slotString(b.Slot), i-2, b.Run, b.Why)
			}
		}
		_, err = s.RunSlot(ctx, "bf", slots[3])
		var he *HandledError
		if !errors.As(err, &he) || he.Reason != "paused" {
			t.Errorf("RunSlot of a paused slot: %v, want refused: paused", err)
		}
		lease, err := e.locker.Acquire(ctx, history.ReconcilerKey, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		p := &pass{r: s.reconciler, lease: lease}
		if _, err := p.judge(ctx, j, slots); err != nil {
			t.Fatal(err)
		}
		log, err := e.locker.ReadLog(ctx, "bf", slots[0].Unix(), 100)
		if err != nil {
			t.Fatal(err)
		}
		for i, at := range slots {
			got, found, err := entryOf("bf", log, at.Unix())
			if err != nil || !found {
				t.Fatalf("slot %s: no entry (%v)", slotString(at), err)
			}
			paused := i >= 2 && i < 7
			if isPaused := got.Outcome == history.OutcomeSkipped && got.Reason == history.ReasonPaused; isPaused != paused {
				t.Errorf("slot %s (+%ds): %s/%s, paused %v", slotString(at), i-2, got.Outcome, got.Reason, paused)
			}
		}

		if n := len(where(e.sink.events(t), evSlotSkipped, "job", "bf", "reason", "paused", "note", "judged by the reconciler")); n != 5 {
			t.Errorf("%d slot.skipped paused lines of the reconciler, want one a paused slot", n)
		}
		if n := len(where(e.sink.events(t), evSlotMissed, "job", "bf")); n != 5 {
			t.Errorf("%d slot.missed lines, want the 5 slots around the pause that nobody ran", n)
		}
		if n := len(rec.all()); n != 0 {
			t.Errorf("%d runs of a paused slot", n)
		}
	})
}

// A slot due during a pause, missed for lack of a quorum and recovered
// under run_once after a resume ended the pause (not its end: the register
// then holds the resume, the pause only in its past), is still paused —
// the simulation's outage pauses ran such slots once the replicas came
// back.
func TestPauseResumedCoversARecoveredSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		inner := e.locker
		f := &faultyLocker{Locker: inner}
		e.locker = f
		rec := &recorder{now: time.Now}
		spec := everySecond(t, "job", rec)
		spec.Misfire = Misfire{Policy: MisfireRunOnce, Deadline: time.Minute}
		stop := running(t, e.scheduler("r1", nil, spec))
		time.Sleep(1500 * time.Millisecond)
		f.down.Store(true) // slots 2.. skipped no_quorum once their freshness runs out
		time.Sleep(time.Second)
		ctx := context.Background()
		if _, err := inner.SetPause(ctx, "job", locking.Pause{Paused: true, By: "ops"}); err != nil { // from 2.5 s
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		if _, err := inner.SetPause(ctx, "job", locking.Pause{By: "ops"}); err != nil { // to 7.5 s
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
		f.down.Store(false) // 8 s: the latest missed slot is recovered once the replicas had their chance
		time.Sleep(12 * time.Second)
		stop()
		for _, r := range rec.all() {
			if at := r.Run.Slot.Sub(bubbleStart); at >= 3*time.Second && at < 8*time.Second {
				t.Errorf("slot %v, due during the pause, ran", at)
			}
		}
	})
}
