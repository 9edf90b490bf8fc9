package scheduler

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// A job with jitter fires each slot at its due time (slot + offset, plus
// this replica's spread of at most 5ms), under the nominal slot: the lock
// key, the job's Run.Slot, the logs' slot and the done marker all name the
// slot; run.started carries jitter_ms, and the start delay counts from the
// due time. A slot whose nominal time is at the start but whose due time is
// after it is fired too (the first slot due after the start).
func TestJitterFiresAtDueUnderNominalSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{now: time.Now}
		const jitter = 10 * time.Second
		spec := jitterSpec(t, "jit", "@every 10s", jitter, rec)
		spy := newClaimSpy(e.locker, locking.SystemClock(0))
		s, err := New(Config{Replica: "r1", Locker: spy, Logger: e.sink.logger("r1"), Metrics: e.metrics,
			MaxClockSkew: 2 * time.Second, ShutdownGrace: 5 * time.Second, Jobs: []JobSpec{spec}})
		require.NoError(t, err)
		stop := running(t, s)
		end := bubbleStart.Add(65 * time.Second)
		time.Sleep(time.Until(end))
		stop()

		var want []time.Time
		for sl := bubbleStart; sl.Before(end); sl = sl.Add(10 * time.Second) {
			if due := spec.Due(sl); due.After(bubbleStart) && due.Before(end) {
				want = append(want, sl)
			}
		}
		runs := rec.all()
		require.Len(t, runs, len(want), "runs %+v", runs)
		evs := e.sink.events(t)
		offsets := map[time.Duration]bool{}
		for i, r := range runs {
			sl := r.Run.Slot
			require.True(t, sl.Equal(want[i]), "run %d: slot %s, want %s", i, slotString(sl), slotString(want[i]))
			off := JitterOffset("jit", sl, jitter)
			offsets[off] = true
			spread := r.Start.Sub(sl.Add(off))
			require.True(t, spread >= 0 && spread <= DefaultSpread, "slot %s started %v after its due time", slotString(sl), spread)
			claimed, ok := spy.claimedAt("jit", sl)
			require.True(t, ok, "slot %s: no claim of the nominal key", slotString(sl))
			require.Equal(t, r.Start, claimed, "slot %s: claimed at %v, started at %v", slotString(sl), claimed, r.Start)

			st := where(evs, "run.started", "slot", slotString(sl))
			require.Len(t, st, 1)
			require.Equal(t, float64(off.Milliseconds()), st[0].num("jitter_ms"), "run.started %v", st[0])
			require.LessOrEqual(t, st[0].num("start_delay_ms"), 5.0, "start delay counted from the nominal slot: %v", st[0])
			require.Len(t, where(evs, "slot.acquired", "slot", slotString(sl)), 1)
		}
		require.Greater(t, len(offsets), len(runs)/2, "offsets barely vary: %v", offsets)
		for _, d := range e.metrics.delays {
			require.LessOrEqual(t, d, DefaultSpread, "StartDelay from the nominal slot")
		}
		// The done marker is under the nominal slot's key.
		_, err = e.locker.Acquire(context.Background(), history.SlotKey("jit", want[len(want)-1]), time.Second)
		var held *locking.HeldError
		require.True(t, errors.As(err, &held) && held.Done, "nominal slot key after the run: %v", err)
	})
}

// Three replicas with clocks at -1.6s, 0 and +1.6s each compute the same
// offset for every slot, without talking: each claims the slot at its due
// time on its own clock (plus its spread), and every slot runs once.
func TestJitterSkewedReplicasAgree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{d: 200 * time.Millisecond, now: time.Now}
		const jitter = 3 * time.Second
		spec := jitterSpec(t, "agree", "@every 3s", jitter, rec)
		var spies []*claimSpy
		var stops []func()
		for i, off := range []time.Duration{-1600 * time.Millisecond, 0, 1600 * time.Millisecond} {
			clock := newJumpClock(off)
			spy := newClaimSpy(e.locker, clock)
			name := fmt.Sprintf("r%d", i)
			// Every replica a candidate: each must try each slot at its
			// due time on its own clock (the fallbacks' own timing is
			// candidates_test.go's).
			s, err := New(Config{Replica: name, Locker: spy, Clock: clock, Logger: e.sink.logger(name),
				MaxClockSkew: 2 * time.Second, ShutdownGrace: 5 * time.Second, Jobs: []JobSpec{spec}, Candidates: -1})
			require.NoError(t, err)
			spies = append(spies, spy)
			stops = append(stops, running(t, s))
		}
		time.Sleep(60 * time.Second)
		for _, stop := range stops {
			stop()
		}
		perSlot := map[int64]int{}
		for _, r := range rec.all() {
			perSlot[r.Run.Slot.Unix()]++
		}
		checked := 0
		for sl := bubbleStart.Add(3 * time.Second); sl.Before(bubbleStart.Add(54 * time.Second)); sl = sl.Add(3 * time.Second) {
			off := JitterOffset("agree", sl, jitter)
			for i, spy := range spies {
				at, ok := spy.claimedAt("agree", sl)
				require.True(t, ok, "replica %d never claimed slot %s", i, slotString(sl))
				spread := at.Sub(sl.Add(off))
				require.True(t, spread >= 0 && spread <= DefaultSpread,
					"replica %d claimed slot %s at %v on its clock, %v after the due time (offset %v)", i, slotString(sl), at, spread, off)
			}
			require.Equal(t, 1, perSlot[sl.Unix()], "slot %s runs", slotString(sl))
			checked++
		}
		require.GreaterOrEqual(t, checked, 15)
		for sl, n := range perSlot {
			require.LessOrEqual(t, n, 1, "slot %d", sl)
		}
	})
}

// findSlot returns the first slot of spec at or after from whose offset is
// in [lo, hi).
func findSlot(t *testing.T, spec JobSpec, from time.Time, lo, hi time.Duration) time.Time {
	t.Helper()
	for sl, n := spec.Schedule.Next(from.Add(-time.Second)), 0; n < 1000; sl, n = spec.Schedule.Next(sl), n+1 {
		if off := JitterOffset(spec.Name, sl, spec.Jitter); off >= lo && off < hi {
			return sl
		}
	}
	t.Fatalf("no slot of %s with an offset in [%v, %v)", spec.Name, lo, hi)
	return time.Time{}
}

// jumpBefore waits until clock reads due - 1.5s, then moves it forward by
// d: the loop, which wakes at least every second, next sees the clock at
// due + d - 1.5s .. due + d - 0.5s.
func jumpBefore(clock *jumpClock, due time.Time, d time.Duration) {
	time.Sleep(due.Add(-1500 * time.Millisecond).Sub(clock.Now()))
	clock.jump(d)
}

// Lateness counts from the due time: a firing 0.5–1.5s after its due time
// is fresh even when that is far past the nominal slot plus the lateness
// bound (3s); one 3.5–4.5s after its due time is late.
func TestJitterLatenessFromDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		clock := newJumpClock(0)
		rec := &recorder{now: clock.Now}
		spec := jitterSpec(t, "late", "@every 10s", 10*time.Second, rec)
		s := e.scheduler("r1", clock, spec)
		stop := running(t, s)
		// The jumps stay below the next slot's due time.
		fresh := findSlot(t, spec, bubbleStart.Add(10*time.Second), 5*time.Second, 8*time.Second)
		jumpBefore(clock, spec.Due(fresh), 2*time.Second)
		late := findSlot(t, spec, fresh.Add(10*time.Second), 0, 5*time.Second)
		jumpBefore(clock, spec.Due(late), 5*time.Second)
		time.Sleep(10 * time.Second)
		stop()

		evs := e.sink.events(t)
		ran := map[string]int{}
		for _, r := range rec.all() {
			ran[slotString(r.Run.Slot)]++
		}
		require.Equal(t, 1, ran[slotString(fresh)], "slot %s, fired %v after its nominal time, did not run", slotString(fresh),
			JitterOffset("late", fresh, spec.Jitter)+500*time.Millisecond)
		st := where(evs, "run.started", "slot", slotString(fresh))
		require.Len(t, st, 1)
		require.InDelta(t, 1000, st[0].num("start_delay_ms"), 510, "start delay from the due time: %v", st[0])
		require.Empty(t, where(evs, "slot.skipped", "slot", slotString(fresh)))

		require.Zero(t, ran[slotString(late)], "late slot %s ran", slotString(late))
		ll := where(evs, "slot.skipped", "reason", string(history.ReasonLate), "slot", slotString(late))
		require.Len(t, ll, 1, "late slot %s: %v", slotString(late), where(evs, "slot.skipped"))
		require.Equal(t, float64(1), ll[0].num("missed"))
	})
}

// The run_once deadline counts from the due time: a slot fired late (5s
// after its due time, well past the bound of 3s) is recovered when its due
// time is within the deadline (10s), although its nominal time is 30s or
// more older than that.
func TestJitterRunOnceDeadlineFromDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		clock := newJumpClock(0)
		rec := &recorder{now: clock.Now}
		spec := jitterSpec(t, "once", "0 * * * * *", time.Minute, rec)
		spec.Misfire = Misfire{Policy: MisfireRunOnce, Deadline: 10 * time.Second}
		s := e.scheduler("r1", clock, spec)
		stop := running(t, s)
		sl := findSlot(t, spec, bubbleStart.Add(time.Minute), 30*time.Second, 50*time.Second)
		jumpBefore(clock, spec.Due(sl), 6*time.Second)
		time.Sleep(10 * time.Second) // the recovery waits until due + 6.5s
		stop()

		evs := e.sink.events(t)
		rc := where(evs, "misfire.recovered", "slot", slotString(sl))
		require.Len(t, rc, 1, "recoveries: %v; skips: %v", where(evs, "misfire.recovered"), where(evs, "slot.skipped"))
		n := 0
		for _, r := range rec.all() {
			if r.Run.Slot.Equal(sl) {
				n++
			}
		}
		require.Equal(t, 1, n, "slot %s runs", slotString(sl))
	})
}
