package scheduler

import (
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// lateWakeAll pauses a lone run_all replica as lateWake does (its clock
// jumps 9.5 s ahead at 3.5 s: slots 4..10 are late, 11.. fresh) and
// returns its logs and runs.
func lateWakeAll(t *testing.T, maxSlots int) ([]event, []record) {
	e := newEnv(t)
	clock := newJumpClock(0)
	rec := &recorder{now: clock.Now}
	spec := everySecond(t, "job", rec)
	spec.Overlap = OverlapAllow
	spec.Misfire = Misfire{Policy: MisfireRunAll, Deadline: time.Minute, Max: maxSlots}
	s := e.scheduler("r1", clock, spec)
	stop := running(t, s)
	time.Sleep(3500 * time.Millisecond)
	clock.jump(9500 * time.Millisecond)
	time.Sleep(5 * time.Second) // the last recovery (slot 10) waits until 16.5 s
	stop()
	return e.sink.events(t), rec.all()
}

// recoveredSlots lists the misfire.recovered slots in log order.
func recoveredSlots(evs []event) []string {
	var out []string
	for _, e := range where(evs, "misfire.recovered") {
		out = append(out, e.str("slot"))
	}
	return out
}

// TestLateWakeRunAll: under run_all every late slot within the deadline
// runs once, oldest first (misfire.recovered, warn, policy run_all), and
// the fresh ones run as usual: no slot is lost, none runs twice.
func TestLateWakeRunAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		evs, runs := lateWakeAll(t, 10)
		var want []string
		for sec := 4; sec <= 10; sec++ {
			want = append(want, slotAt(sec))
		}
		if got := recoveredSlots(evs); !slices.Equal(got, want) {
			t.Fatalf("misfire.recovered slots %v, want %v (oldest first)", got, want)
		}
		rc := where(evs, "misfire.recovered")
		if rc[0].str("level") != "WARN" || rc[0].str("policy") != "run_all" {
			t.Errorf("misfire.recovered line: %v", rc[0])
		}
		count := map[string]int{}
		var order []string
		for _, r := range runs {
			s := slotString(r.Run.Slot)
			count[s]++
			if r.Run.Slot.Before(bubbleStart.Add(11 * time.Second)) {
				order = append(order, s)
			}
		}
		for sec := 1; sec <= 17; sec++ {
			if count[slotAt(sec)] != 1 {
				t.Errorf("slot %d ran %d times, want 1", sec, count[slotAt(sec)])
			}
		}
		if !slices.IsSorted(order) {
			t.Errorf("slots up to 10 ran in the order %v", order)
		}
		if late := where(evs, "slot.skipped", "reason", "late"); len(late) != 0 {
			t.Errorf("late lines, though every missed slot ran: %v", late)
		}
	})
}

// TestLateWakeRunAllMax: with misfire.max 3 the newest three late slots
// run (8, 9, 10), oldest first; the older ones are logged late once.
func TestLateWakeRunAllMax(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		evs, runs := lateWakeAll(t, 3)
		if got, want := recoveredSlots(evs), []string{slotAt(8), slotAt(9), slotAt(10)}; !slices.Equal(got, want) {
			t.Fatalf("misfire.recovered slots %v, want %v", got, want)
		}
		late := where(evs, "slot.skipped", "reason", "late")
		if len(late) != 1 || late[0].str("first_slot") != slotAt(4) || late[0].str("slot") != slotAt(7) || late[0].num("missed") != 4 {
			t.Fatalf("late lines: %v", late)
		}
		count := map[string]int{}
		for _, r := range runs {
			count[slotString(r.Run.Slot)]++
		}
		for sec := 1; sec <= 17; sec++ {
			want := 1
			if sec >= 4 && sec <= 7 {
				want = 0
			}
			if count[slotAt(sec)] != want {
				t.Errorf("slot %d ran %d times, want %d", sec, count[slotAt(sec)], want)
			}
		}
	})
}

// TestRunAllSkipsSlotsThatRanElsewhere: a run_all replica paused for 20 s
// while another replica — still on misfire skip, so its done markers live
// only DoneTTL (6 s here) — ran every slot. When it wakes, its late slots
// within the deadline have no marker any more and their claims are free:
// the slot history says they ran, and none runs again.
func TestRunAllSkipsSlotsThatRanElsewhere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{d: 100 * time.Millisecond, now: time.Now}
		mk := func(name string, clock locking.Clock, policy MisfirePolicy) *Scheduler {
			spec := everySecond(t, "job", rec)
			spec.Misfire = Misfire{Policy: policy, Deadline: time.Minute, Max: 100}
			s, err := New(Config{Replica: name, Locker: e.locker, Clock: clock, Logger: e.sink.logger(name),
				LockTTL: 3 * time.Second, MaxClockSkew: time.Second, ShutdownGrace: time.Second, Jobs: []JobSpec{spec}})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		paused := &pausableClock{}
		ok := mk("ok", locking.SystemClock(0), MisfireSkip)
		late := mk("late", paused, MisfireRunAll)
		if ok.DoneTTL() != 6*time.Second {
			t.Fatalf("DoneTTL %v, want 6s", ok.DoneTTL())
		}
		stop1, stop2 := running(t, ok), running(t, late)
		time.Sleep(2500 * time.Millisecond)
		paused.pause()
		time.Sleep(20 * time.Second)
		paused.cont() // at 22.5 s: slots 3..20 are late for it
		time.Sleep(15 * time.Second)
		stop2()
		stop1()
		count := map[int64]int{}
		for _, r := range rec.all() {
			count[r.Run.Slot.Unix()-bubbleStart.Unix()]++
		}
		for sec := int64(1); sec <= 36; sec++ {
			if count[sec] != 1 {
				e.sink.dump(t)
				t.Fatalf("slot %d ran %d times, want 1", sec, count[sec])
			}
		}
		evs := e.sink.events(t)
		if rc := where(evs, "misfire.recovered"); len(rc) != 0 {
			t.Errorf("recovered slots that ran: %v", rc)
		}
		// The slots whose markers had expired were told by the history.
		byHistory := 0
		for _, s := range where(evs, "slot.skipped", "replica", "late", "reason", "done") {
			if s.str("outcome") == "succeeded" {
				byHistory++
			}
		}
		if byHistory < 5 {
			e.sink.dump(t)
			t.Errorf("%d late slots found done through the history, want most of slots 3..16", byHistory)
		}
	})
}

// TestQuorumOutageRunAll: the slots every replica skipped with no_quorum
// (4 and 5: their freshness ran out in the outage) are each recovered
// once when the stores answer again, oldest first; every other slot runs
// once as usual.
func TestQuorumOutageRunAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		f := &faultyLocker{Locker: e.locker}
		e.locker = f
		rec := &recorder{d: 100 * time.Millisecond, now: time.Now}
		spec := everySecond(t, "job", rec)
		spec.Misfire = Misfire{Policy: MisfireRunAll, Deadline: time.Minute}
		var stops []func()
		for i := range 3 {
			stops = append(stops, running(t, e.scheduler(fmt.Sprintf("r%d", i), nil, spec)))
		}
		time.Sleep(3500 * time.Millisecond)
		f.down.Store(true)
		time.Sleep(5 * time.Second)
		f.down.Store(false)
		time.Sleep(10 * time.Second)
		for _, stop := range stops {
			stop()
		}
		count := map[int64]int{}
		for _, r := range rec.all() {
			count[r.Run.Slot.Unix()-bubbleStart.Unix()]++
		}
		for sec := int64(1); sec <= 18; sec++ {
			if count[sec] != 1 {
				e.sink.dump(t)
				t.Fatalf("slot %d ran %d times, want 1", sec, count[sec])
			}
		}
		rc := recoveredSlots(e.sink.events(t))
		if !slices.Equal(rc, []string{slotAt(4), slotAt(5)}) {
			t.Errorf("misfire.recovered %v, want slots 4 and 5 once each, in order", rc)
		}
	})
}

// TestStartupMissedRunAll: replicas starting after all were down run the
// missed slots within the deadline (the newest max: 6 of the 10, from 60 s
// ago to the start, as the check runs 6.5 s after it) once each, oldest
// first; the older ones are logged late.
func TestStartupMissedRunAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, rec := startAfterOutage(t, MisfireRunAll)
		evs := e.sink.events(t)
		var want []string
		for sec := -50; sec <= 0; sec += 10 {
			want = append(want, slotAt(sec))
		}
		if got := recoveredSlots(evs); !slices.Equal(got, want) {
			e.sink.dump(t)
			t.Fatalf("misfire.recovered %v, want %v", got, want)
		}
		var ran []string
		for _, r := range rec.all() {
			ran = append(ran, slotString(r.Run.Slot))
		}
		if !slices.Equal(ran, want) {
			t.Fatalf("runs %v, want %v in that order", ran, want)
		}
		late := where(evs, "slot.skipped", "reason", "late")
		if len(late) != 3 || late[0].num("missed") != 4 || late[0].str("first_slot") != slotAt(-90) || late[0].str("slot") != slotAt(-60) {
			t.Errorf("older missed slots: %v", late)
		}
	})
}
