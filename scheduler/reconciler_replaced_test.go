package scheduler

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"
)

// TestReconcilerJudgesTheSlotsOfAReplacedDefinition: slot 6 of a */2 job
// finds no majority while it is fresh (no_quorum: no entry); at 10.5 s a
// reload makes the job */3, before the reconciler's wait for slot 6 is
// over. The
// reconciler judges slot 6 under the definition that fired it — reported
// missed, once — and the new definition's slots from the reload on. (It
// judged from the reload only: slot 6 was dropped without a line.)
func TestReconcilerJudgesTheSlotsOfAReplacedDefinition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		fl := &faultyLocker{Locker: e.locker}
		rec := &recorder{now: time.Now}
		s := e.reconciling("r1", fl, time.Second, cronSpec(t, "resched", "*/2 * * * * *", rec))
		stop := running(t, s)
		time.Sleep(5500 * time.Millisecond)
		fl.down.Store(true)
		time.Sleep(4300 * time.Millisecond) // slot 6 finds the stores down while it is fresh (to 9 s)
		fl.down.Store(false)
		time.Sleep(700 * time.Millisecond) // at 10.5 s
		if _, err := s.Reload(context.Background(), "v2", []JobSpec{cronSpec(t, "resched", "*/3 * * * * *", rec)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(40 * time.Second)
		stop()
		evs := e.sink.events(t)
		missed := where(evs, evSlotMissed, "job", "resched")
		if len(missed) != 1 || missed[0].str("slot") != slotAt(6) {
			e.sink.dump(t)
			t.Errorf("slot.missed lines %v, want one, of slot 6", missed)
		}
		if n := len(where(evs, evSlotsUnjudged)); n != 0 {
			t.Errorf("%d reconcile.unjudged lines", n)
		}
		w, err := e.locker.ReadRecord(context.Background(), history.ReconciledKey("resched"))
		if err != nil || w < bubbleStart.Add(30*time.Second).Unix() {
			t.Errorf("judged up to %v (%v), want past 30 s under the new definition", time.Unix(w, 0).Sub(bubbleStart), err)
		}
	})
}
