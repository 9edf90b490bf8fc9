package scheduler

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// TestPauseAfterTheSlotLeavesItsRunHeld: another replica's run holds slot
// T's claim when an operator pauses the job, after T was due; this
// replica's claim of T, refused by both, is skipped held (the truth: a run
// of T goes on), with no paused line and no paused entry. The run then
// dies before confirming its start, and T reads missed with
// may_have_started, as any such slot does. Over the in-process store, the
// claim was reported paused.
func TestPauseAfterTheSlotLeavesItsRunHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, s, rec := backfillEnv(t, OverlapAllow, 10)
		ctx := context.Background()
		j, _ := s.job("bf")
		due := time.Now().Add(-time.Second).Truncate(time.Second)
		key := history.SlotKey("bf", due)
		if _, err := e.locker.Claim(ctx, key, 3*time.Second); err != nil { // the other replica's run, never confirmed
			t.Fatal(err)
		}
		if _, err := e.locker.SetPause(ctx, "bf", locking.Pause{Paused: true, By: "ops"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.attempts.attemptSlot(j, due, originScheduled, nil); err != nil {
			t.Fatal(err)
		}
		evs := e.sink.events(t)
		if held := where(evs, evSlotSkipped, "slot", slotString(due), "reason", string(history.ReasonHeld)); len(held) != 1 {
			e.sink.dump(t)
			t.Errorf("slot.skipped held lines %v, want one: the claim was refused by the run going on", held)
		}
		if paused := where(evs, evSlotSkipped, "reason", string(history.ReasonPaused)); len(paused) != 0 {
			t.Errorf("slot.skipped paused for a slot that was running: %v", paused)
		}
		entries, err := history.ReadEntries(ctx, e.locker, "bf", due, 10)
		if err != nil || len(entries) != 0 {
			t.Errorf("history %v (%v), want no entry while the run goes on", entries, err)
		}

		time.Sleep(5 * time.Second) // the run's lease expires: it died
		s.settlement.settleOrphan(j, &locking.Abandoned{Key: key})
		s.wg.Wait()
		got, found, err := s.outcomes.slotRecorded(ctx, "bf", due)
		if err != nil || !found || got.Outcome != history.OutcomeMissed || !got.MayHaveStarted {
			t.Errorf("slot's outcome %+v (found %v, %v), want missed with may_have_started", got, found, err)
		}
		if n := len(rec.all()); n != 0 {
			t.Errorf("%d runs of the job here, want none", n)
		}
	})
}
