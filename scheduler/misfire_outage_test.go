package scheduler

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"
)

// runOnceReplicas is two replicas, not running, of one every-second job
// "job" under run_once (deadline a minute) on one env; rec records its
// runs, 100 ms each.
func runOnceReplicas(t *testing.T, a, b string) (*env, *recorder, *Scheduler, *Scheduler) {
	e := newEnv(t)
	rec := &recorder{d: 100 * time.Millisecond, now: time.Now}
	spec := everySecond(t, "job", rec)
	spec.Misfire = Misfire{Policy: MisfireRunOnce, Deadline: time.Minute}
	return e, rec, e.scheduler(a, nil, spec), e.scheduler(b, nil, spec)
}

// TestRunOnceOneRecoveryPerOutage: replicas whose clocks differ, or that
// see the stores again at different times, end one outage with different
// latest missed slots, and each may decide before the others noted theirs
// (laterMissed reads a record they have not raised yet). The recovery that
// comes second, holding its claim and the job lease, finds the first one's
// entry in the history and runs nothing: run_once runs one slot an outage,
// whichever replica gets there first, and the second slot gets its honest
// outcome (skipped, late, naming the slot that ran). A slot that ran on
// time ends the outage: a recovery before it does not count.
func TestRunOnceOneRecoveryPerOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, rec, r0, r2 := runOnceReplicas(t, "r0", "r2")
		j0, _ := r0.job("job")
		j2, _ := r2.job("job")

		// An earlier outage: slot 3 on time, slot 2 recovered.
		time.Sleep(3 * time.Second)
		r0.attempts.attemptSlot(j0, bubbleAt(3), originScheduled, nil)
		time.Sleep(17 * time.Second)
		r0.attempts.attemptSlot(j0, bubbleAt(2), originRecovered, nil)
		// This outage: slots 4..8 missed by everyone; r0 recovers 5 (its
		// latest), r2 then 8 (its latest, noted too late for r0 to see).
		r0.attempts.attemptSlot(j0, bubbleAt(5), originRecovered, nil)
		r2.attempts.attemptSlot(j2, bubbleAt(8), originRecovered, nil)
		// A recovery of an earlier slot after a later one ran.
		r2.attempts.attemptSlot(j2, bubbleAt(4), originRecovered, nil)

		ran := map[int]int{}
		for _, r := range rec.all() {
			ran[int(r.Run.Slot.Sub(bubbleStart)/time.Second)]++
		}
		want := map[int]int{2: 1, 3: 1, 5: 1}
		for sec := 2; sec <= 8; sec++ {
			if ran[sec] != want[sec] {
				e.sink.dump(t)
				t.Fatalf("slot %d ran %d times, want %d", sec, ran[sec], want[sec])
			}
		}
		evs := e.sink.events(t)
		if rc := where(evs, "misfire.recovered"); len(rc) != 2 || rc[0].str("slot") != slotAt(2) || rc[1].str("slot") != slotAt(5) {
			t.Errorf("misfire.recovered: %v", rc)
		}
		late := where(evs, "slot.skipped", "reason", "late", "slot", slotAt(8))
		if len(late) != 1 || late[0].str("note") != "run_once ran an earlier slot of this outage, "+slotAt(5) {
			e.sink.dump(t)
			t.Errorf("slot 8: late lines %v", late)
		}
		late = where(evs, "slot.skipped", "reason", "late", "slot", slotAt(4))
		if len(late) != 1 || late[0].str("note") != "run_once ran a later slot of this outage, "+slotAt(5) {
			t.Errorf("slot 4: late lines %v", late)
		}
		if h, ok, err := r2.outcomes.slotRecorded(t.Context(), "job", bubbleAt(8)); err != nil || !ok || h.Outcome != history.OutcomeSkipped || h.Reason != history.ReasonLate {
			t.Errorf("slot 8 history: %+v %v %v", h, ok, err)
		}
	})
}

// TestRunOnceOutageDecidedAfterTheOthersNoted: one replica sees the
// stores again long after its latest missed slot (4) — its outage lasted
// longer than recoverAfter, or it tried no later slot — while another
// replica, still cut off, misses slot 6, and a third runs slot 5 late in
// between. Deciding on slot 4 at once would run it before the other noted
// 6, and the other's recovery of 6 would find slot 5 ran and run 6 too:
// two recoveries of one outage (TestRedisQuorumLost saw it). The decision
// waits until every replica that could still try a slot due by then has,
// so slot 4 finds 6 missed and only 6 runs.
func TestRunOnceOutageDecidedAfterTheOthersNoted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, rec, r0, r1 := runOnceReplicas(t, "r0", "r1")
		j0, _ := r0.job("job")
		j1, _ := r1.job("job")

		time.Sleep(5 * time.Second)
		r0.attempts.attemptSlot(j0, bubbleAt(5), originScheduled, nil)
		time.Sleep(7 * time.Second) // now 12: past 4's due time + recoverAfter
		var wg sync.WaitGroup
		wg.Go(func() { r1.misfire.recoverOutage(j1, bubbleAt(4), bubbleAt(4)) })
		time.Sleep(1300 * time.Millisecond) // r0 sees the stores at 13.3
		wg.Go(func() { r0.misfire.recoverOutage(j0, bubbleAt(6), bubbleAt(6)) })
		wg.Wait()

		ran := map[int]int{}
		for _, r := range rec.all() {
			sec := int(r.Run.Slot.Sub(bubbleStart) / time.Second)
			ran[sec]++
			// Decided recoverAfter after the latest slot due when r0 saw
			// the stores again (13): off the instants the slots fire at.
			if want := bubbleAt(13).Add(r0.recoverAfter()); sec == 6 && !r.Start.Equal(want) {
				t.Errorf("slot 6 recovered at %s, want %s", r.Start.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
			}
		}
		if ran[4] != 0 || ran[5] != 1 || ran[6] != 1 {
			e.sink.dump(t)
			t.Fatalf("slots 4, 5, 6 ran %d, %d, %d times; want 0, 1, 1", ran[4], ran[5], ran[6])
		}
		evs := e.sink.events(t)
		if rc := where(evs, "misfire.recovered"); len(rc) != 1 || rc[0].str("slot") != slotAt(6) {
			t.Errorf("misfire.recovered: %v, want slot 6 once", rc)
		}
		late := where(evs, "slot.skipped", "reason", "late", "slot", slotAt(4))
		if len(late) != 1 || late[0].str("note") != "a later slot was missed too: run_once runs the latest, "+slotAt(6) {
			t.Errorf("slot 4: late lines %v", late)
		}
	})
}
