package scheduler

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// TestSettleAbandonedReadsTheHistory: a started claim whose holder died is
// settled and reported once — run.abandoned and an abandoned entry —
// unless the slot history already records that run (its own end, or a
// settler's verdict, which reached some stores while the claim stayed on
// others): then the claim is closed with that entry and reported no
// second time.
func TestSettleAbandonedReadsTheHistory(t *testing.T) {
	for _, c := range []struct {
		name     string
		recorded *history.Entry // the slot's entry before the settlement, run id filled in
		reported int
		want     history.Evidence
	}{
		{"nothing recorded", nil, 1, history.RanUnfinished},
		{"its own end recorded", &history.Entry{Outcome: history.OutcomeSucceeded, Replica: "dead"}, 0, history.Ran},
		{"settled before", &history.Entry{Outcome: history.OutcomeAbandoned, Replica: "dead", SettledBy: "r9"}, 0, history.RanUnfinished},
		{"a reconciler's missed", &history.Entry{Outcome: history.OutcomeMissed, Reason: history.ReasonUnknown}, 1, history.RanUnfinished},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e, s, _ := backfillEnv(t, OverlapAllow, 50)
				ctx := context.Background()
				j, _ := s.job("bf")
				slot := time.Now().Add(-20 * time.Second).Truncate(time.Second)
				key := history.SlotKey("bf", slot)
				lease, err := e.locker.Claim(ctx, key, 2*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				lease.Start()
				if err := lease.Extend(ctx); err != nil { // confirmed started
					t.Fatal(err)
				}
				runID := lease.Grant().ID // its holder dies: never ended
				if c.recorded != nil {
					h := *c.recorded
					h.Slot, h.RunID = slotString(slot), runID
					if err := e.locker.AppendLog(ctx, "bf", locking.LogAppend{Entry: h.LogEntry(slot), Keep: 50}); err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(5 * time.Second) // its lease expires
				s.settleOrphan(j, &locking.Abandoned{Key: key})
				synctest.Wait()

				if n := len(where(e.sink.events(t), evRunAbandoned, "slot", slotString(slot))); n != c.reported {
					t.Errorf("%d run.abandoned lines, want %d", n, c.reported)
				}
				got, found, err := s.slotRecorded(ctx, "bf", slot)
				if err != nil || !found || got.Evidence() != c.want || got.RunID != runID {
					t.Errorf("recorded %+v %v %v, want the run's outcome (%v)", got, found, err, c.want)
				}
				if _, err := e.locker.Claim(ctx, key, time.Second); err == nil {
					t.Error("the slot's key is free: no done marker closed the claim")
				}
			})
		})
	}
}

// TestSettlerOfAnEndedRunIsNotReportedMissed: a run ended and its end
// reached some stores only; once its markers expired a settler took over
// the claim left on the others (started: the run's own claim) and died
// before closing it. The next settler finds the dead settler's claim —
// never confirmed, for a settler runs no body — on a slot whose history
// records the run's own end. It closes the claim with that entry: no
// slot.missed may_have_started about a slot that ran and ended (found by
// the small-world checker, world cast2).
func TestSettlerOfAnEndedRunIsNotReportedMissed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, s, _ := backfillEnv(t, OverlapAllow, 50)
		ctx := context.Background()
		j, _ := s.job("bf")
		slot := time.Now().Add(-20 * time.Second).Truncate(time.Second)
		key := history.SlotKey("bf", slot)
		ran := history.Entry{Slot: slotString(slot), Outcome: history.OutcomeSucceeded, Replica: "r1", RunID: "0123456789abcdef"}
		if err := e.locker.AppendLog(ctx, "bf", locking.LogAppend{Entry: ran.LogEntry(slot), Keep: 50}); err != nil {
			t.Fatal(err)
		}
		// The dead settler's claim: won, never confirmed, never ended.
		if _, err := e.locker.Claim(ctx, key, 2*time.Second); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second) // its lease expires
		s.settleOrphan(j, &locking.Abandoned{Key: key})
		synctest.Wait()

		if n := len(where(e.sink.events(t), evSlotMissed, "slot", slotString(slot))); n != 0 {
			t.Errorf("%d slot.missed lines for a slot whose run ended, want 0", n)
		}
		got, found, err := s.slotRecorded(ctx, "bf", slot)
		if err != nil || !found || got != ran {
			t.Errorf("recorded %+v %v %v, want the run's own end %+v", got, found, err, ran)
		}
		if _, err := e.locker.Claim(ctx, key, time.Second); err == nil {
			t.Error("the slot's key is free: no done marker closed the claim")
		}
	})
}
