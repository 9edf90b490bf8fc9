package scheduler

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/jobs"
)

// Hot reload on one replica, in synctest bubbles: what a reload does to
// added, removed and rescheduled jobs, slot by slot; that a rejected one
// changes nothing; that every reader follows it.

// cronSpec is a job on the 6-field UTC schedule text.
func cronSpec(t testing.TB, name, text string, j jobs.Job) JobSpec {
	t.Helper()
	sp := everySecond(t, name, j)
	sched, err := ParseSchedule(text, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	sp.Spec, sp.Schedule = text, sched
	return sp
}

// ranAt returns the slots (seconds after bubbleStart) the recorder ran,
// with how many runs each.
func ranAt(r *recorder) map[int]int {
	out := map[int]int{}
	for slot, n := range perSlot(r.all()) {
		out[int(slot-bubbleStart.Unix())] = n
	}
	return out
}

// want fails unless the recorder ran exactly the slots secs, once each.
func wantSlots(t *testing.T, what string, r *recorder, secs ...int) {
	t.Helper()
	got := ranAt(r)
	var have []int
	for s, n := range got {
		if n != 1 {
			t.Errorf("%s: slot %d ran %d times", what, s, n)
		}
		have = append(have, s)
	}
	slices.Sort(have)
	if !slices.Equal(have, secs) {
		t.Errorf("%s ran slots %v, want %v", what, have, secs)
	}
}

func seq(from, to, step int) []int {
	var out []int
	for s := from; s <= to; s += step {
		out = append(out, s)
	}
	return out
}

// TestReloadAddsRemovesReschedules: a reload at 10.5 s adds a job (it runs
// from slot 11), removes one (its slot 10, still running, ends normally;
// it runs no slot after), reschedules two (every slot of the old schedule
// up to the reload, every slot of the new one after, a slot of both once)
// and keeps one unchanged (every slot once).
func TestReloadAddsRemovesReschedules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		short := func() *recorder { return &recorder{d: 100 * time.Millisecond, now: time.Now} }
		keep, resched, faster, added := short(), short(), short(), short()
		gone := &recorder{d: 1500 * time.Millisecond, now: time.Now}
		s := e.scheduler("r1", nil, everySecond(t, "keep", keep), cronSpec(t, "gone", "*/2 * * * * *", gone),
			cronSpec(t, "resched", "*/2 * * * * *", resched), cronSpec(t, "faster", "*/5 * * * * *", faster))
		stop := running(t, s)
		time.Sleep(10*time.Second + 500*time.Millisecond)
		res, err := s.Reload(context.Background(), "v2", []JobSpec{cronSpec(t, "added", "* * * * * *", added),
			everySecond(t, "keep", keep), cronSpec(t, "resched", "*/3 * * * * *", resched),
			cronSpec(t, "faster", "*/2 * * * * *", faster)})
		if err != nil {
			t.Fatal(err)
		}
		want := ReloadResult{Added: []string{"added"}, Removed: []string{"gone"}, Rescheduled: []string{"resched", "faster"}}
		if fmt.Sprint(res) != fmt.Sprint(want) {
			t.Errorf("Reload = %+v, want %+v", res, want)
		}
		if h := s.DefinitionsHash(); h != "v2" {
			t.Errorf("DefinitionsHash after the reload = %q", h)
		}
		time.Sleep(10 * time.Second) // to 20.5 s
		stop()

		wantSlots(t, "keep", keep, seq(1, 20, 1)...)
		wantSlots(t, "gone", gone, seq(2, 10, 2)...)
		wantSlots(t, "resched", resched, 2, 4, 6, 8, 10, 12, 15, 18)
		wantSlots(t, "faster", faster, 5, 10, 12, 14, 16, 18, 20)
		wantSlots(t, "added", added, seq(11, 20, 1)...)
		evs := e.sink.events(t)
		// The removed job's last run went on past the reload and ended
		// as any run does.
		last := where(evs, "run.succeeded", "job", "gone", "slot", slotAt(10))
		if len(last) != 1 || last[0].num("duration_ms") != 1500 {
			e.sink.dump(t)
			t.Errorf("gone's slot 10: %v, want one run.succeeded of 1500 ms", last)
		}
		for _, r := range gone.all() {
			if r.Err != nil {
				t.Errorf("gone's slot %v ended with %v", r.Run.Slot, r.Err)
			}
		}
		if n := len(where(evs, "run.canceled")) + len(where(evs, "slot.skipped")); n != 0 {
			e.sink.dump(t)
			t.Errorf("%d canceled runs or skipped slots on a lone replica", n)
		}
	})
}

// TestReloadSlotBoundaries: rescheduling a job at an instant between its
// slots, with and without jitter (changed or not): no slot runs twice;
// every slot of the old definition due before the reload ran, and every
// slot of the new one due after it; no slot only the old definition has
// ran after the reload, nor (without jitter) one only the new one has
// before it.
func TestReloadSlotBoundaries(t *testing.T) {
	type def struct {
		text   string
		jitter time.Duration
	}
	cases := []struct{ old, new def }{
		{def{"* * * * * *", 0}, def{"*/5 * * * * *", 0}},
		{def{"*/2 * * * * *", 0}, def{"*/3 * * * * *", 0}},
		{def{"*/3 * * * * *", 0}, def{"*/2 * * * * *", 0}},
		{def{"*/5 * * * * *", 0}, def{"* * * * * *", 0}},
		{def{"*/2 * * * * *", 0}, def{"*/2 * * * * *", 1500 * time.Millisecond}},
		{def{"*/2 * * * * *", 1500 * time.Millisecond}, def{"*/2 * * * * *", 0}},
		{def{"* * * * * *", 800 * time.Millisecond}, def{"*/2 * * * * *", 300 * time.Millisecond}},
		{def{"*/3 * * * * *", 2 * time.Second}, def{"* * * * * *", 900 * time.Millisecond}},
		{def{"* * * * * *", 200 * time.Millisecond}, def{"*/2 * * * * *", 900 * time.Millisecond}},
		{def{"*/2 * * * * *", 0}, def{"*/2 * * * * *", 0}},
	}
	const spread = DefaultSpread
	for _, c := range cases {
		// at -1: inside the spread delay of an old slot (due, not yet
		// fired); -2: after the old definition fired a slot of both
		// schedules that the new one's jitter makes due later.
		for _, at := range []time.Duration{10*time.Second + 500123*time.Microsecond, 11*time.Second + 2*time.Millisecond,
			11*time.Second + 700*time.Millisecond, -1, -2} {
			when := map[time.Duration]string{-1: "spread", -2: "fired_before_new_due"}[at]
			if when == "" {
				when = fmt.Sprint(at)
			}
			name := fmt.Sprintf("%s+%v_to_%s+%v_at_%s", c.old.text, c.old.jitter, c.new.text, c.new.jitter, when)
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					e := newEnv(t)
					rec := &recorder{d: 50 * time.Millisecond, now: time.Now}
					mk := func(d def) JobSpec {
						sp := cronSpec(t, "j", d.text, rec)
						sp.Jitter, sp.Overlap = d.jitter, OverlapAllow
						return sp
					}
					oldSpec, newSpec := mk(c.old), mk(c.new)
					s := e.scheduler("r1", nil, oldSpec)
					switch at {
					case -1:
						for slot := oldSpec.Schedule.Next(bubbleStart.Add(10 * time.Second)); at < 0; slot = oldSpec.Schedule.Next(slot) {
							if d := s.fleet.spreadDelay("j", slot); d > 10*time.Microsecond {
								at = oldSpec.Due(slot).Add(d / 2).Sub(bubbleStart)
							}
						}
					case -2:
						for slot := oldSpec.Schedule.Next(bubbleStart.Add(10 * time.Second)); at < 0 && slot.Before(bubbleStart.Add(time.Minute)); slot = oldSpec.Schedule.Next(slot) {
							fired := oldSpec.Due(slot).Add(s.fleet.spreadDelay("j", slot))
							if newSpec.Schedule.Next(slot.Add(-time.Second)).Equal(slot) && newSpec.Due(slot).Sub(fired) > time.Millisecond {
								at = fired.Add(newSpec.Due(slot).Sub(fired) / 2).Sub(bubbleStart)
							}
						}
						if at < 0 || at > 20*time.Second {
							t.Skip("no slot of both schedules that the new jitter makes due later")
						}
					}
					stop := running(t, s)
					time.Sleep(at)
					if _, err := s.Reload(context.Background(), "v2", []JobSpec{newSpec}); err != nil {
						t.Fatal(err)
					}
					const end = 25
					time.Sleep(end*time.Second - at + 3*time.Second)
					stop()

					R := bubbleStart.Add(at)
					ran := ranAt(rec)
					in := func(sp JobSpec, sec int) bool {
						slot := bubbleAt(sec)
						return sp.Schedule.Next(slot.Add(-time.Second)).Equal(slot)
					}
					due := func(sp JobSpec, sec int) time.Time {
						return sp.Due(bubbleAt(sec))
					}
					for sec := 1; sec <= end; sec++ {
						n := ran[sec]
						inOld, inNew := in(oldSpec, sec), in(newSpec, sec)
						switch {
						case n > 1:
							t.Errorf("slot %d ran %d times", sec, n)
						case inOld && due(oldSpec, sec).Add(spread).Before(R) && n != 1:
							t.Errorf("slot %d of the old schedule, due %v before the reload, did not run", sec, due(oldSpec, sec).Sub(bubbleStart))
						case inNew && due(newSpec, sec).After(R) && n != 1:
							t.Errorf("slot %d of the new schedule, due %v after the reload, did not run", sec, due(newSpec, sec).Sub(bubbleStart))
						case inOld && inNew && !due(oldSpec, sec).Add(spread).Before(R) && n != 1:
							t.Errorf("slot %d of both schedules, not yet fired by the old one at the reload, did not run", sec)
						case inOld && !inNew && due(oldSpec, sec).After(R.Add(spread)) && n != 0:
							t.Errorf("slot %d, of the old schedule only, due after the reload, ran", sec)
						case !inOld && n != 0 && (!inNew || c.old.jitter == 0 && c.new.jitter == 0 && due(newSpec, sec).Add(spread).Before(R)):
							t.Errorf("slot %d ran: not a slot of the old schedule, nor of the new one after the reload", sec)
						}
					}
					if n := len(where(e.sink.events(t), "slot.skipped")); n != 0 {
						e.sink.dump(t)
						t.Errorf("%d slots skipped: a slot was fired twice, or late", n)
					}
				})
			})
		}
	}
}

// TestReloadRejected: definitions New would refuse are refused whole, and
// the old ones go on firing every slot.
func TestReloadRejected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		a, b := &recorder{now: time.Now}, &recorder{now: time.Now}
		s := e.scheduler("r1", nil, everySecond(t, "a", a))
		stop := running(t, s)
		defer stop()
		time.Sleep(2500 * time.Millisecond)
		before := s.DefinitionsHash() // computed from the jobs: no Config.DefinitionsHash
		noJob := everySecond(t, "b", nil)
		noJob.Job = nil
		tooMuchJitter := everySecond(t, "b", b)
		tooMuchJitter.Jitter = 2 * time.Second
		failures := everySecond(t, "b", b)
		failures.PauseOnFailure = DefaultHistoryKeep + 1
		for name, specs := range map[string][]JobSpec{
			"duplicate":          {everySecond(t, "b", b), everySecond(t, "b", b)},
			"bad name":           {everySecond(t, "_b", b)},
			"no job":             {noJob},
			"jitter > interval":  {tooMuchJitter},
			"pause_on_failure":   {failures},
			"bad overlap":        {func() JobSpec { sp := everySecond(t, "b", b); sp.Overlap = "sometimes"; return sp }()},
			"bad misfire policy": {func() JobSpec { sp := everySecond(t, "b", b); sp.Misfire.Policy = "twice"; return sp }()},
		} {
			if _, err := s.Reload(context.Background(), "bad", specs); err == nil {
				t.Errorf("%s: Reload accepted it", name)
			}
		}
		if h := s.DefinitionsHash(); h != before || h == "" {
			t.Errorf("DefinitionsHash after rejected reloads = %q, want %q as before them", h, before)
		}
		time.Sleep(3 * time.Second) // to 5.5 s
		stop()
		wantSlots(t, "a", a, 1, 2, 3, 4, 5)
		wantSlots(t, "b", b)
	})
}

// TestReloadLoweringTheJitterDropsNoSlot: a reload that lowers a job's
// jitter after a slot's new due time and its lateness bound have passed,
// but before its old due time, runs the slot (due now, as the reload made
// it), once — it was found late and handed to the misfire policy, which
// under skip dropped it.
func TestReloadLoweringTheJitterDropsNoSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{now: time.Now}
		const jitter = 50 * time.Second
		var name string
		var slot time.Time
		for i := 0; name == ""; i++ {
			n := fmt.Sprintf("j%d", i)
			sl := time.Now().Truncate(time.Minute).Add(time.Minute)
			if jitterOffset(n, sl, jitter) > 20*time.Second {
				name, slot = n, sl
			}
		}
		mk := func(j time.Duration) JobSpec {
			sp := cronSpec(t, name, "0 * * * * *", rec)
			sp.Jitter, sp.Overlap = j, OverlapAllow
			return sp
		}
		s := e.scheduler("r1", nil, mk(jitter))
		stop := running(t, s)
		time.Sleep(time.Until(slot.Add(10 * time.Second))) // late under no jitter, not yet due under the old one
		if _, err := s.Reload(context.Background(), "v2", []JobSpec{mk(0)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Until(slot.Add(jitter + 5*time.Second)))
		stop()
		n := 0
		for _, r := range rec.all() {
			if r.Run.Slot.Equal(slot) {
				n++
			}
		}
		if n != 1 {
			e.sink.dump(t)
			t.Errorf("slot %s ran %d times, want once", slotString(slot), n)
		}
		if late := where(e.sink.events(t), "slot.skipped", "reason", "late"); len(late) != 0 {
			t.Errorf("slots skipped late after the reload: %v", late)
		}
	})
}

// TestReloadFromAllowToForbidWaitsForTheRunsGoingOn: a run started under
// overlap allow holds no job lease; after a reload to forbid, the slots
// that come while it goes on are skipped for overlap, not run beside it;
// once it ended, the next slot runs.
func TestReloadFromAllowToForbidWaitsForTheRunsGoingOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{d: 8 * time.Second, now: time.Now}
		mk := func(o Overlap) JobSpec {
			sp := cronSpec(t, "j", "*/5 * * * * *", rec)
			sp.Overlap = o
			return sp
		}
		s := e.scheduler("r1", nil, mk(OverlapAllow))
		stop := running(t, s)
		first := time.Now().Truncate(5 * time.Second).Add(5 * time.Second)
		time.Sleep(time.Until(first.Add(time.Second))) // the first run (8 s) goes on past the next slot
		if _, err := s.Reload(context.Background(), "v2", []JobSpec{mk(OverlapForbid)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Second)
		stop()
		runs := rec.all()
		for i := 1; i < len(runs); i++ {
			if runs[i].Start.Before(runs[i-1].End) {
				t.Errorf("run of %s started at %v, before the run of %s ended (%v)", slotString(runs[i].Run.Slot),
					runs[i].Start.Sub(first), slotString(runs[i-1].Run.Slot), runs[i-1].End.Sub(first))
			}
		}
		if len(runs) < 2 {
			t.Errorf("%d runs: the job stopped running after the reload", len(runs))
		}
	})
}

// TestReloadGivenUpIsNotApplied: a reload whose context ended before it
// was sent (a process frozen past the deadline of a SIGHUP's reload) fails
// with the context's error and changes nothing, every time — with the
// scheduler's loop ready to take it, it was applied or not as the Go
// runtime picked a ready case of a select, while the caller was told it
// failed (the simulation's seed 315852 × 24 h gave two traces).
func TestReloadGivenUpIsNotApplied(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		a := &recorder{now: time.Now}
		s := e.scheduler("r1", nil, everySecond(t, "a", a))
		stop := running(t, s)
		defer stop()
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait() // the loop waits for its next slot, ready to take a reload
		before := s.DefinitionsHash()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		changed := everySecond(t, "a", a)
		changed.Timeout = 11 * time.Minute
		for i := range 32 {
			if _, err := s.Reload(ctx, "", []JobSpec{changed}); err == nil {
				t.Fatalf("reload %d with its context ended: no error", i)
			}
			synctest.Wait()
			if h := s.DefinitionsHash(); h != before {
				t.Fatalf("reload %d with its context ended was applied: hash %q, want %q", i, h, before)
			}
		}
	})
}
