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
				told := &writtenLog{}
				s.cfg.Notifier, j.spec.Notify = replicaNotifier{told, "settler"}, notifyAll
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
				// The notifier is told what is reported, by the settler
				// whose end wrote it; a recorded run is not told again.
				if got := told.all(); len(got) != c.reported ||
					c.reported == 1 && (got[0].w.Entry.Outcome != history.OutcomeAbandoned || got[0].w.Entry.RunID != runID) {
					t.Errorf("notifier told %+v, want the abandoned run %d time(s)", got, c.reported)
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
