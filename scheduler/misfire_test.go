package scheduler

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// lateWake pauses a lone replica (its clock jumps 10s ahead between two
// slots) and returns its logs and runs.
func lateWake(t *testing.T, policy MisfirePolicy) ([]event, []record) {
	e := newEnv(t)
	clock := newJumpClock(0)
	rec := &recorder{now: clock.Now}
	spec := everySecond(t, "job", rec)
	spec.Overlap = OverlapAllow
	spec.Misfire = Misfire{Policy: policy, Deadline: time.Minute}
	s := e.scheduler("r1", clock, spec)
	stop := running(t, s)
	time.Sleep(3500 * time.Millisecond)
	clock.jump(9500 * time.Millisecond) // clock now 13s; the loop wakes at 13.5s
	time.Sleep(5 * time.Second)         // a run_once recovery of slot 10 waits until 16.5s
	stop()
	return e.sink.events(t), rec.all()
}

// TestLateWakeSkip: slots later than the lateness bound (3s) are not run;
// they are logged once, as one slot.skipped reason late line (warn) with
// the count; the fresh ones still run.
func TestLateWakeSkip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		evs, runs := lateWake(t, MisfireSkip)
		late := where(evs, "slot.skipped", "reason", "late")
		if len(late) != 1 {
			t.Fatalf("late lines: %v", late)
		}
		l := late[0]
		if l.str("slot") != slotAt(10) || l.str("first_slot") != slotAt(4) || l.num("missed") != 7 || l.str("level") != "WARN" {
			t.Errorf("late line: %v", l)
		}
		if l.str("note") != skipNote {
			t.Errorf("a line about several late slots says why: note %q", l.str("note"))
		}
		ran := map[string]bool{}
		for _, r := range runs {
			ran[slotString(r.Run.Slot)] = true
		}
		for sec := 1; sec <= 17; sec++ {
			want := sec <= 3 || sec >= 11
			if ran[slotAt(sec)] != want {
				t.Errorf("slot %d: ran=%v, want %v", sec, ran[slotAt(sec)], want)
			}
		}
		if n := len(where(evs, "misfire.recovered")); n != 0 {
			t.Errorf("skip policy recovered %d slots", n)
		}
	})
}

// TestLateWakeRunOnce: under run_once the latest late slot runs once
// (misfire.recovered, then the normal run lines); the older ones are
// logged as late.
func TestLateWakeRunOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		evs, runs := lateWake(t, MisfireRunOnce)
		rec := where(evs, "misfire.recovered")
		if len(rec) != 1 || rec[0].str("slot") != slotAt(10) || rec[0].str("level") != "WARN" {
			t.Fatalf("misfire.recovered: %v", rec)
		}
		ok := where(evs, "run.succeeded", "slot", slotAt(10), "run_id", rec[0].str("run_id"))
		if len(ok) != 1 {
			t.Errorf("recovered slot did not run to success")
		}
		late := where(evs, "slot.skipped", "reason", "late")
		if len(late) != 1 || late[0].num("missed") != 6 || late[0].str("slot") != slotAt(9) || late[0].str("first_slot") != slotAt(4) {
			t.Errorf("late line: %v", late)
		}
		n := 0
		for _, r := range runs {
			if slotString(r.Run.Slot) == slotAt(10) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("slot 10 ran %d times", n)
		}
	})
}

// TestLateReplicaDoesNotRerun: a replica paused past the lateness bound,
// while another ran the slots, runs none of them again under run_once
// (the done marker says so), and none are lost.
func TestLateReplicaDoesNotRerun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{d: 100 * time.Millisecond, now: time.Now}
		spec := everySecond(t, "job", rec)
		spec.Misfire = Misfire{Policy: MisfireRunOnce, Deadline: time.Minute}
		paused := &pausableClock{}
		s1 := e.scheduler("ok", locking.SystemClock(0), spec)
		s2 := e.scheduler("paused", paused, spec)
		stop1, stop2 := running(t, s1), running(t, s2)
		time.Sleep(3500 * time.Millisecond)
		paused.pause()
		time.Sleep(8 * time.Second)
		paused.cont() // at 11.5s: slots 4..8 are late for it, 9..11 fresh
		time.Sleep(10 * time.Second)
		stop1()
		stop2()
		per := map[int64]int{}
		for _, r := range rec.all() {
			per[r.Run.Slot.Unix()]++
		}
		for sec := 1; sec <= 21; sec++ {
			if n := per[bubbleStart.Unix()+int64(sec)]; n != 1 {
				e.sink.dump(t)
				t.Fatalf("slot %d ran %d times", sec, n)
			}
		}
		evs := e.sink.events(t)
		if n := len(where(evs, "misfire.recovered")); n != 0 {
			t.Errorf("%d recoveries of slots that ran", n)
		}
		// Slots 4..7, older than the one run_once recovers, ran on the
		// other replica: no late warning for them, one done line.
		if n := len(where(evs, "slot.skipped", "replica", "paused", "reason", "late")); n != 0 {
			t.Errorf("paused replica: %d late lines for slots the other replica ran, want 0", n)
		}
		done := where(evs, "slot.skipped", "replica", "paused", "reason", "done", "first_slot", slotAt(4))
		if len(done) != 1 || done[0].num("count") != 4 || done[0].str("slot") != slotAt(7) {
			t.Errorf("paused replica: done lines for slots 4..7 %v, want one with count 4", done)
		}
		if n := len(where(evs, "slot.skipped", "replica", "paused", "reason", "done", "slot", slotAt(8))); n != 1 {
			t.Errorf("paused replica: slot 8 not found done by run_once")
		}
	})
}

// startAfterOutage starts three replicas whose job's record says the last
// handled slot was 100s before their start, as after a total outage.
func startAfterOutage(t *testing.T, policy MisfirePolicy) (*env, *recorder) {
	e := newEnv(t)
	start := time.Now()
	if err := e.locker.AdvanceRecord(context.Background(), history.LastKey("job"), start.Unix()-100); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{d: 100 * time.Millisecond, now: time.Now}
	sched, _ := ParseSchedule("*/10 * * * * *", time.UTC)
	spec := JobSpec{Name: "job", Schedule: sched, Job: rec,
		Misfire: Misfire{Policy: policy, Deadline: time.Minute}}
	var stops []func()
	for i := range 3 {
		stops = append(stops, running(t, e.scheduler(fmt.Sprintf("r%d", i), nil, spec)))
	}
	time.Sleep(8 * time.Second) // before the first slot (10s) after the start
	for _, stop := range stops {
		stop()
	}
	return e, rec
}

// TestStartupMissedSkip: replicas starting after all were down log the
// missed slots once (one replica wins the latest slot's lock), at warn.
func TestStartupMissedSkip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, rec := startAfterOutage(t, MisfireSkip)
		late := where(e.sink.events(t), "slot.skipped", "reason", "late")
		if len(late) != 1 {
			e.sink.dump(t)
			t.Fatalf("late lines: %v", late)
		}
		// slots -90 .. 0 s (every 10s) after the record at -100s
		if late[0].num("missed") != 10 || late[0].str("slot") != slotAt(0) || late[0].str("first_slot") != slotAt(-90) {
			t.Errorf("late line: %v", late[0])
		}
		if len(rec.all()) != 0 {
			t.Errorf("skip policy ran %d slots", len(rec.all()))
		}
		if r, _ := e.locker.ReadRecord(context.Background(), history.LastKey("job")); r != bubbleStart.Unix() {
			t.Errorf("record %d not advanced to the missed slot", r)
		}
	})
}

// TestStartupMissedRunOnce: N replicas starting together after an outage
// run the latest missed slot once.
func TestStartupMissedRunOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, rec := startAfterOutage(t, MisfireRunOnce)
		evs := e.sink.events(t)
		recovered := where(evs, "misfire.recovered")
		if len(recovered) != 1 || recovered[0].str("slot") != slotAt(0) {
			e.sink.dump(t)
			t.Fatalf("misfire.recovered: %v", recovered)
		}
		runs := rec.all()
		if len(runs) != 1 || !runs[0].Run.Slot.Equal(bubbleStart) {
			t.Fatalf("runs: %+v", runs)
		}
		late := where(evs, "slot.skipped", "reason", "late")
		if len(late) != 3 || late[0].num("missed") != 9 {
			t.Errorf("older missed slots: %v", late)
		}
	})
}

// TestQuorumOutage: while the stores have no majority nothing runs; a slot
// is retried while it is fresh (slot + lateness bound, 3s here) and skipped
// with no_quorum (warn) when its freshness ran out in the outage; slots
// still fresh when the stores answer again run then, once; under run_once
// the latest slot skipped with no_quorum is recovered once.
func TestQuorumOutage(t *testing.T) {
	for _, policy := range []MisfirePolicy{MisfireSkip, MisfireRunOnce} {
		t.Run(string(policy), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t)
				f := &faultyLocker{Locker: e.locker}
				e.locker = f
				rec := &recorder{d: 100 * time.Millisecond, now: time.Now}
				spec := everySecond(t, "job", rec)
				spec.Misfire = Misfire{Policy: policy, Deadline: time.Minute}
				var stops []func()
				for i := range 3 {
					stops = append(stops, running(t, e.scheduler(fmt.Sprintf("r%d", i), nil, spec)))
				}
				time.Sleep(3500 * time.Millisecond)
				f.down.Store(true)
				time.Sleep(5 * time.Second) // slots 4..8 fire in the outage; 4 and 5 run out of freshness in it
				f.down.Store(false)
				time.Sleep(8 * time.Second) // a recovery waits 6.5s after its slot
				for _, stop := range stops {
					stop()
				}
				per := map[int]int{}
				for _, r := range rec.all() {
					per[int(r.Run.Slot.Unix()-bubbleStart.Unix())]++
				}
				for sec := 1; sec <= 16; sec++ {
					want := 1
					// Slots 6..8 were fresh when the quorum came back at
					// 8.5s: their claims are all won then and, under
					// overlap forbid, they take the job lease in turn.
					if sec == 4 || sec == 5 {
						want = 0
						if policy == MisfireRunOnce && sec == 5 {
							want = 1
						}
					}
					if per[sec] != want {
						e.sink.dump(t)
						t.Fatalf("slot %d ran %d times, want %d", sec, per[sec], want)
					}
				}
				evs := e.sink.events(t)
				for sec := 4; sec <= 8; sec++ {
					nq := where(evs, "slot.skipped", "reason", "no_quorum", "slot", slotAt(sec))
					if sec >= 6 {
						if len(nq) != 0 {
							t.Errorf("slot %d was fresh when the quorum came back: no_quorum lines %v", sec, nq)
						}
						continue
					}
					if len(nq) != 3 || nq[0].str("level") != "WARN" || nq[0].str("error") == "" {
						t.Errorf("slot %d: no_quorum lines %v", sec, nq)
					}
				}
				for _, r := range rec.all() {
					sec := r.Run.Slot.Unix() - bubbleStart.Unix()
					// Run within their freshness (slot + 3s), after the
					// quorum came back.
					if sec >= 6 && sec <= 8 && (r.Start.Before(bubbleStart.Add(8500*time.Millisecond)) || r.Start.After(r.Run.Slot.Add(3*time.Second))) {
						t.Errorf("slot %d started at %v, want between 8.5s and slot+3s", sec, r.Start.Sub(bubbleStart))
					}
				}
				rc := where(evs, "misfire.recovered")
				if policy == MisfireRunOnce && (len(rc) != 1 || rc[0].str("slot") != slotAt(5)) {
					t.Errorf("misfire.recovered: %v", rc)
				}
				if policy == MisfireSkip && len(rc) != 0 {
					t.Errorf("misfire.recovered under skip: %v", rc)
				}
			})
		})
	}
}

// TestDSTSlotsInTheLoop: the loop fires wall-clock slots in the New York
// spring-forward gap once, at the first instant after it, and fall-back
// fold slots once.
func TestDSTSlotsInTheLoop(t *testing.T) {
	ny := mustLoc(t, "America/New_York")
	cases := []struct {
		spec, from string
		run        time.Duration
		want       []string
	}{
		{"30 2 * * *", "2026-03-08T06:58:00Z", 4 * time.Minute, []string{"2026-03-08T07:00:00Z"}},
		{"0 */30 2 * * *", "2026-03-08T06:58:00Z", 4 * time.Minute, []string{"2026-03-08T07:00:00Z"}},
		{"30 1 * * *", "2026-11-01T05:28:00Z", 65 * time.Minute, []string{"2026-11-01T05:30:00Z"}},
		{"0 */20 * * * *", "2026-11-01T05:28:00Z", 65 * time.Minute, []string{
			"2026-11-01T05:40:00Z", "2026-11-01T06:00:00Z", "2026-11-01T06:20:00Z", // 01:40 EDT, 01:00 and 01:20 EST
		}},
	}
	for _, c := range cases {
		t.Run(c.spec+"@"+c.from, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t)
				clock := locking.SystemClock(utc(c.from).Sub(time.Now()))
				rec := &recorder{now: clock.Now}
				sched, err := ParseSchedule(c.spec, ny)
				if err != nil {
					t.Fatal(err)
				}
				s := e.scheduler("r1", clock, JobSpec{Name: "dst", Schedule: sched, Job: rec, Location: ny})
				stop := running(t, s)
				time.Sleep(c.run)
				stop()
				var got []string
				for _, r := range rec.all() {
					got = append(got, slotString(r.Run.Slot))
				}
				if fmt.Sprint(got) != fmt.Sprint(c.want) {
					t.Errorf("slots run %v, want %v", got, c.want)
				}
			})
		})
	}
}

// TestRecoverWaitsOutGhostLock: a missed slot that looks held by a lock
// nobody renews (an attempt a frozen node executed on resuming) is
// recovered once that lock expires, within the deadline.
func TestRecoverWaitsOutGhostLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		inner := e.locker
		f := &faultyLocker{Locker: inner}
		e.locker = f
		rec := &recorder{now: time.Now}
		spec := everySecond(t, "job", rec)
		spec.Misfire = Misfire{Policy: MisfireRunOnce, Deadline: time.Minute}
		stop := running(t, e.scheduler("r1", nil, spec))
		time.Sleep(3500 * time.Millisecond)
		f.down.Store(true)
		time.Sleep(5 * time.Second)
		// The ghost: slot 5 — the latest whose freshness ran out in the
		// outage (slots 6..8 are still fresh at 8.5s and run then) — held
		// for 10s by a lease nobody keeps or ends.
		if _, err := inner.Acquire(context.Background(), history.SlotKey("job", bubbleStart.Add(5*time.Second)), 10*time.Second); err != nil {
			t.Fatal(err)
		}
		f.down.Store(false)
		time.Sleep(25 * time.Second)
		stop()
		evs := e.sink.events(t)
		rc := where(evs, "misfire.recovered")
		if len(rc) != 1 || rc[0].str("slot") != slotAt(5) {
			e.sink.dump(t)
			t.Fatalf("misfire.recovered: %v", rc)
		}
		if at, _ := time.Parse(time.RFC3339Nano, rc[0].str("time")); at.Before(bubbleStart.Add(18500 * time.Millisecond)) {
			t.Errorf("recovered at %v, before the ghost lock expired", at)
		}
		n := 0
		for _, r := range rec.all() {
			if r.Run.Slot.Equal(bubbleStart.Add(5 * time.Second)) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("slot 5 ran %d times", n)
		}
	})
}

// TestStartupRunOnceFrequentJob: after a total outage, a job that fires
// every second runs its regular slots at once, and each handled slot moves
// the job's record past the missed one before the recovery is judged
// (recoverAfter, 4.5 s here). With a short lock.ttl the ordinary done
// marker (6 s) would not outlive that wait plus the skew, yet the latest
// missed slot must still run once: the decision rests on the slot's own
// marker, kept past the deadline for run_once jobs, not on the record
// (regression: it used to be skipped as "done").
func TestStartupRunOnceFrequentJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		start := time.Now()
		if err := e.locker.AdvanceRecord(context.Background(), history.LastKey("tick"), start.Unix()-30); err != nil {
			t.Fatal(err)
		}
		rec := &recorder{d: 100 * time.Millisecond, now: time.Now}
		spec := everySecond(t, "tick", rec)
		spec.Overlap = OverlapAllow
		spec.Misfire = Misfire{Policy: MisfireRunOnce, Deadline: time.Minute}
		var stops []func()
		for i := range 3 {
			s, err := New(Config{
				Replica: fmt.Sprintf("r%d", i), Locker: e.locker, Clock: locking.SystemClock(0),
				Logger: e.sink.logger(fmt.Sprintf("r%d", i)), LockTTL: 3 * time.Second,
				MaxClockSkew: time.Second, ShutdownGrace: time.Second, Jobs: []JobSpec{spec},
			})
			if err != nil {
				t.Fatal(err)
			}
			stops = append(stops, running(t, s))
		}
		time.Sleep(8*time.Second + 500*time.Millisecond)
		for _, stop := range stops {
			stop()
		}
		evs := e.sink.events(t)
		recovered := where(evs, "misfire.recovered")
		if len(recovered) != 1 || recovered[0].str("slot") != slotAt(0) {
			e.sink.dump(t)
			t.Fatalf("misfire.recovered: %v, want one for %s", recovered, slotAt(0))
		}
		count := map[string]int{}
		for _, r := range rec.all() {
			count[slotString(r.Run.Slot)]++
		}
		for sec := 0; sec <= 8; sec++ {
			if count[slotAt(sec)] != 1 {
				t.Errorf("slot %s ran %d times, want 1", slotAt(sec), count[slotAt(sec)])
			}
		}
	})
}

// fakeMisfireAttempts records the slots the misfire policy hands to the
// attempt pipeline, and answers each start-up probe with late.
type fakeMisfireAttempts struct {
	fakeAttempts
	found  probe
	probed []time.Time
}

func (f *fakeMisfireAttempts) probeLate(j *job, t time.Time) probe {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.probed = append(f.probed, t)
	return f.found
}

// TestMisfireAlone: the misfire policy built over a fake attempt
// pipeline. run_once hands the latest late slot to the pipeline as a
// recovered attempt, once every replica could have fired it, and logs
// the older ones late; skip logs them late and attempts nothing; at
// start, a skip job's slots missed since its record are probed and,
// found not handled, logged late.
func TestMisfireAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newEnv(t)
		ctx := context.Background()
		once := everySecond(t, "once", &recorder{now: time.Now})
		once.Misfire = Misfire{Policy: MisfireRunOnce, Deadline: time.Minute}
		skip := everySecond(t, "skip", &recorder{now: time.Now})
		e := testEngine(t, Config{Replica: "r1", Locker: env.locker, Logger: env.sink.logger("r1"), Metrics: env.metrics,
			Jobs: []JobSpec{once, skip}})
		attempts := &fakeMisfireAttempts{found: probeMissed}
		m := newMisfire(e, attempts, newOutcomes(e, &fakeRetrier{}))
		now := time.Now().Truncate(time.Second)
		var late lateRange
		late.add(now.Add(-2 * time.Second))
		late.add(now.Add(-time.Second))

		jo, _ := e.job("once")
		m.handle(jo, late)
		if len(attempts.kinds) != 1 || attempts.kinds[0] != originRecovered || !attempts.slots[0].Equal(late.last) {
			t.Errorf("attempts %v of %v, want one recovered attempt of %v", attempts.kinds, attempts.slots, late.last)
		}
		js, _ := e.job("skip")
		m.handle(js, late)
		if len(attempts.kinds) != 1 {
			t.Errorf("skip attempted a late slot: %v", attempts.slots)
		}
		if n := len(where(env.sink.events(t), evSlotSkipped, "job", "skip", "reason", string(history.ReasonLate))); n != 1 {
			t.Errorf("%d slot.skipped late lines for skip, want 1", n)
		}

		if err := env.locker.AdvanceRecord(ctx, history.LastKey("skip"), now.Add(-10*time.Second).Unix()); err != nil {
			t.Fatal(err)
		}
		m.startupCheck(js, time.Now())
		if len(attempts.probed) != 1 {
			t.Fatalf("probed %v, want the latest slot missed since the record", attempts.probed)
		}
		if n := len(where(env.sink.events(t), evSlotSkipped, "job", "skip", "reason", string(history.ReasonLate))); n != 2 {
			t.Errorf("%d slot.skipped late lines for skip after the start-up check, want 2", n)
		}

		// The latest missed slot found paused (logged so by the probe):
		// the older ones are still logged late, not left without an
		// outcome (the simulation, seed 219592: all replicas down while a
		// skip job was paused, one slot reported by nobody).
		attempts.found = probePaused
		m.startupCheck(js, time.Now())
		lates := where(env.sink.events(t), evSlotSkipped, "job", "skip", "reason", string(history.ReasonLate))
		if len(lates) != 3 {
			t.Fatalf("%d slot.skipped late lines after a paused probe, want 3", len(lates))
		}
		last := attempts.probed[len(attempts.probed)-1]
		got := lates[2]
		if got.str("slot") != slotString(last.Add(-time.Second)) || got.str("first_slot") != slotString(now.Add(-9*time.Second)) ||
			int(got.num("missed")) != int(last.Sub(now.Add(-9*time.Second))/time.Second) {
			t.Errorf("late line %v, want the slots from %s to the one before %s", got, slotString(now.Add(-9*time.Second)), slotString(last))
		}
	})
}
