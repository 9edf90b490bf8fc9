package scheduler

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"
)

// TestFrozenReplicaWarnsOnlyForSlotsNobodyRan: a replica frozen 12 s
// (its timers stopped, as under SIGSTOP) while another ran every slot of
// an every-second job under misfire skip wakes with the slots it came too
// late for: they were handled, so no late warning, and one debug line
// slot.skipped reason done names them (count, first_slot). A slot that
// nobody ran is still warned of. (It warned "late, missed: 9" for slots
// the other replica ran.)
func TestFrozenReplicaWarnsOnlyForSlotsNobodyRan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{d: 100 * time.Millisecond, now: time.Now}
		spec := everySecond(t, "job", rec)
		frozen := &pausableClock{}
		stopOk := running(t, e.scheduler("ok", nil, spec))
		stopFrozen := running(t, e.scheduler("frozen", frozen, spec))
		time.Sleep(3500 * time.Millisecond)
		frozen.pause()
		time.Sleep(12 * time.Second)
		frozen.cont() // at 15.5 s: slots 4..12 are late for it
		time.Sleep(10 * time.Second)
		stopFrozen()
		stopOk()
		evs := e.sink.events(t)
		if late := where(evs, evSlotSkipped, "replica", "frozen", "reason", string(history.ReasonLate)); len(late) != 0 {
			e.sink.dump(t)
			t.Errorf("the frozen replica warned of slots the other ran: %v", late)
		}
		done := where(evs, evSlotSkipped, "replica", "frozen", "reason", string(history.ReasonDone), "first_slot", slotAt(4))
		if len(done) != 1 || done[0].num("count") < 9 || done[0].str("level") != "DEBUG" {
			t.Errorf("done lines for the late slots: %v, want one debug line from slot 4 with count >= 9", done)
		}
	})
}

// TestLateWakeSkipWarnsForSlotsNobodyRan: alone, the same replica warns
// of every slot it came too late for: nobody handled them.
func TestLateWakeSkipWarnsForSlotsNobodyRan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{now: time.Now}
		frozen := &pausableClock{}
		stop := running(t, e.scheduler("frozen", frozen, everySecond(t, "job", rec)))
		time.Sleep(3500 * time.Millisecond)
		frozen.pause()
		time.Sleep(12 * time.Second)
		frozen.cont()
		time.Sleep(10 * time.Second)
		stop()
		evs := e.sink.events(t)
		late := where(evs, evSlotSkipped, "reason", string(history.ReasonLate), "first_slot", slotAt(4))
		if len(late) != 1 || late[0].num("missed") < 9 || late[0].str("level") != "WARN" {
			e.sink.dump(t)
			t.Errorf("late lines %v, want one warning from slot 4 of at least 9 slots", late)
		}
		if done := where(evs, evSlotSkipped, "reason", string(history.ReasonDone)); len(done) != 0 {
			t.Errorf("slots nobody ran reported done: %v", done)
		}
	})
}
