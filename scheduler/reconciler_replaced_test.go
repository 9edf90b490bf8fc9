package scheduler

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/locking"
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

// TestReconcilerReportsOldSlotsOfAReplacedDefinition: another replica's
// run of slot 20 min of a */10 min job goes on for more than a day (its
// claim open), so the reconciler's passes wait for it; at 2 h 5 min a
// reload reschedules the job. Once the slot is older than a day, it
// leaves the window under the replaced definition that fired it: one
// reconcile.unjudged line names it, and the passes judge on. (It was
// passed over without a line.)
func TestReconcilerReportsOldSlotsOfAReplacedDefinition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		ctx := context.Background()
		rec := &recorder{now: time.Now}
		slot := bubbleStart.Add(20 * time.Minute)
		s := e.reconciling("r1", nil, time.Minute, cronSpec(t, "resched", "0 */10 * * * *", rec))
		stop := running(t, s)
		time.Sleep(time.Until(slot.Add(-500 * time.Millisecond)))
		run, err := e.locker.Claim(ctx, history.SlotKey("resched", slot), 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		run.Keep(ctx)
		time.Sleep(time.Until(bubbleStart.Add(2*time.Hour + 5*time.Minute)))
		if _, err := s.Reload(ctx, "v2", []JobSpec{cronSpec(t, "resched", "0 5-59/10 * * * *", rec)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Until(bubbleStart.Add(24*time.Hour + 30*time.Minute)))
		stop()
		if err := run.End(ctx, locking.Ending{}).Err; err != nil {
			t.Fatal(err)
		}
		evs := e.sink.events(t)
		unjudged := where(evs, evSlotsUnjudged, "job", "resched")
		if len(unjudged) != 1 || unjudged[0].str("first_slot") != slotString(slot) || unjudged[0].num("count") != 1 {
			e.sink.dump(t)
			t.Fatalf("reconcile.unjudged lines %v, want one naming %s", unjudged, slotString(slot))
		}
		if n := len(where(evs, evSlotMissed, "job", "resched")); n != 0 {
			t.Errorf("%d slots reported missed", n)
		}
		w, err := e.locker.ReadRecord(ctx, history.ReconciledKey("resched"))
		if err != nil || w < bubbleStart.Add(2*time.Hour).Unix() {
			t.Errorf("judged up to %v (%v), want past the reload", time.Unix(w, 0).Sub(bubbleStart), err)
		}
	})
}

// TestReconcilerJudgesAReplacedDefinitionBeforeAnyRecord: a new */2 job's
// first slot (2 s) finds no majority while it is fresh (the stores are
// down until 5.5 s); at 4.5 s, before any pass judged a slot of the job
// (its record is still unset), a reload makes it */3. Slot 2 is judged under the definition that fired it and
// reported missed, once. (With no record, the pass started from the
// reload: slot 2 was dropped without a line.)
func TestReconcilerJudgesAReplacedDefinitionBeforeAnyRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		fl := &faultyLocker{Locker: e.locker}
		rec := &recorder{now: time.Now}
		s := e.reconciling("r1", fl, time.Second, cronSpec(t, "resched", "*/2 * * * * *", rec))
		fl.down.Store(true)
		stop := running(t, s)
		time.Sleep(4500 * time.Millisecond) // slot 2 finds the stores down while it is fresh (to 5 s)
		w, err := e.locker.ReadRecord(context.Background(), history.ReconciledKey("resched"))
		if err != nil || w != 0 {
			t.Fatalf("record %d (%v) before the reload, want none", w, err)
		}
		if _, err := s.Reload(context.Background(), "v2", []JobSpec{cronSpec(t, "resched", "*/3 * * * * *", rec)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // slot 2's freshness runs out: no_quorum
		fl.down.Store(false)
		time.Sleep(40 * time.Second)
		stop()
		evs := e.sink.events(t)
		missed := where(evs, evSlotMissed, "job", "resched")
		if len(missed) != 1 || missed[0].str("slot") != slotAt(2) {
			e.sink.dump(t)
			t.Errorf("slot.missed lines %v, want one, of slot 2", missed)
		}
	})
}
