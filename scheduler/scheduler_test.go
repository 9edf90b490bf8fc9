package scheduler

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

type env struct {
	t       *testing.T
	sink    *logSink
	locker  locking.Locker
	metrics *countMetrics
}

func newEnv(t *testing.T) *env {
	return &env{t: t, sink: &logSink{}, locker: locking.NewLocal(locking.Options{Replica: "local"}),
		metrics: newCountMetrics()}
}

func (e *env) scheduler(replica string, clock locking.Clock, specs ...JobSpec) *Scheduler {
	e.t.Helper()
	if clock == nil {
		clock = locking.SystemClock(0)
	}
	s, err := New(Config{
		Replica: replica, Locker: e.locker, Clock: clock, Logger: e.sink.logger(replica),
		Metrics: e.metrics, LockTTL: 30 * time.Second, MaxClockSkew: 2 * time.Second,
		ShutdownGrace: 5 * time.Second, Jobs: specs,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// TestRunEverySlotOnce: one replica, a 1-second schedule: every slot after
// the start runs once, on time, with the contract's events and fields, and
// the job sees exactly what the log says.
func TestRunEverySlotOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{d: 300 * time.Millisecond, now: time.Now}
		s := e.scheduler("r1", nil, everySecond(t, "tick", rec))
		stop := running(t, s)
		time.Sleep(10*time.Second + 500*time.Millisecond)
		if err := s.Healthy(); err != nil {
			t.Errorf("Healthy while running: %v", err)
		}
		stop()
		if err := s.Healthy(); !errors.Is(err, ErrStopped) {
			t.Errorf("Healthy after stop = %v, want ErrStopped", err)
		}

		runs := rec.all()
		if len(runs) != 10 {
			e.sink.dump(t)
			t.Fatalf("%d runs, want 10 (slots 1..10 s after start)", len(runs))
		}
		evs := e.sink.events(t)
		var lastToken uint64
		for i, r := range runs {
			want := bubbleStart.Add(time.Duration(i+1) * time.Second)
			if !r.Run.Slot.Equal(want) || r.Run.Slot.Location() != time.UTC || r.Run.Manual {
				t.Errorf("run %d: slot %v, want %v UTC", i, r.Run.Slot, want)
			}
			if d := r.Start.Sub(want); d < 0 || d >= DefaultSpread {
				t.Errorf("run %d started %v after its slot, want within the spread", i, d)
			}
			if r.Run.Attempt != 1 || r.Run.Replica != "r1" || r.Run.Job != "tick" || r.Run.RunID == "" {
				t.Errorf("run %d: %+v", i, r.Run)
			}
			if r.Run.FencingToken <= lastToken {
				t.Errorf("run %d: token %d not above %d", i, r.Run.FencingToken, lastToken)
			}
			lastToken = r.Run.FencingToken
			slot := slotString(want)
			for _, ev := range []string{"slot.acquired", "run.started", "run.succeeded"} {
				got := where(evs, ev, "slot", slot, "job", "tick", "run_id", r.Run.RunID, "replica", "r1")
				if len(got) != 1 {
					t.Fatalf("slot %s: %d %s lines with run_id %s, want 1", slot, len(got), ev, r.Run.RunID)
				}
				if got[0].num("fencing_token") != float64(r.Run.FencingToken) {
					t.Errorf("%s: fencing_token %v, job got %d", ev, got[0]["fencing_token"], r.Run.FencingToken)
				}
				// slot.acquired is folded into run.started at the default
				// level (it would repeat run.started's fields).
				if want := map[bool]string{true: "DEBUG", false: "INFO"}[ev == "slot.acquired"]; got[0].str("level") != want {
					t.Errorf("%s at level %s, want %s", ev, got[0].str("level"), want)
				}
			}
			ok := where(evs, "run.succeeded", "slot", slot)[0]
			if ok.num("attempt") != 1 || ok.num("duration_ms") != 300 {
				t.Errorf("run.succeeded: %v", ok)
			}
		}
		if n := len(where(evs, "slot.skipped")); n != 0 {
			t.Errorf("%d skips on a lone replica", n)
		}
		// After the run: the slot is a done marker, the job lease is free,
		// the record names the last slot.
		last := bubbleStart.Add(10 * time.Second)
		_, err := e.locker.Acquire(context.Background(), history.SlotKey("tick", last), time.Second)
		var held *locking.HeldError
		if !errors.As(err, &held) || !held.Done || held.Note != "succeeded" {
			t.Errorf("slot key after the run: %v", err)
		}
		l, err := e.locker.Acquire(context.Background(), history.RunKey("tick"), time.Second)
		if err != nil {
			t.Errorf("job lease still held after the run: %v", err)
		} else {
			l.End(context.Background(), locking.Ending{})
		}
		if rec, _ := e.locker.ReadRecord(context.Background(), history.LastKey("tick")); rec != last.Unix() {
			t.Errorf("record %d, want %d", rec, last.Unix())
		}
		if got := e.metrics.get("tick/succeeded", true); got != 10 {
			t.Errorf("RunFinished succeeded %d, want 10", got)
		}
		if len(e.metrics.delays) != 10 {
			t.Errorf("StartDelay calls %d", len(e.metrics.delays))
		}
	})
}

// TestJobLoggerCarriesAuditFields: the Logger handed to the plugin already
// carries job, slot, run_id, fencing_token, attempt and replica.
func TestJobLoggerCarriesAuditFields(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		job := funcJob(func(ctx context.Context, run jobs.Run) error {
			run.Logger.Info("hello from the plugin", "event", "plugin.log")
			return nil
		})
		s := e.scheduler("r1", nil, everySecond(t, "hello", job))
		stop := running(t, s)
		time.Sleep(1500 * time.Millisecond)
		stop()
		evs := e.sink.events(t)
		got := where(evs, "plugin.log")
		if len(got) != 1 {
			t.Fatalf("%d plugin lines", len(got))
		}
		started := where(evs, "run.started")[0]
		for _, k := range []string{"job", "slot", "run_id", "replica"} {
			if got[0].str(k) == "" || got[0].str(k) != started.str(k) {
				t.Errorf("plugin line %s=%q, run.started has %q", k, got[0].str(k), started.str(k))
			}
		}
		if got[0].num("fencing_token") == 0 || got[0].num("attempt") != 1 {
			t.Errorf("plugin line: %v", got[0])
		}
	})
}

// TestSkewedReplicasRunEachSlotOnce: three replicas, clocks at -1.6s, 0,
// +1.6s (0.8 × max_clock_skew each way), sharing one lock store: every slot
// runs exactly once; the others log held or done at debug.
func TestSkewedReplicasRunEachSlotOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{d: 200 * time.Millisecond, now: time.Now}
		var stops []func()
		for i, off := range []time.Duration{-1600 * time.Millisecond, 0, 1600 * time.Millisecond} {
			s := e.scheduler(fmt.Sprintf("r%d", i), newJumpClock(off), everySecond(t, "job", rec))
			stops = append(stops, running(t, s))
		}
		time.Sleep(30 * time.Second)
		for _, stop := range stops {
			stop()
		}
		perSlot := map[int64]int{}
		for _, r := range rec.all() {
			perSlot[r.Run.Slot.Unix()]++
		}
		// Slots that all three replicas took part in: after the fastest
		// clock's start +1.6s... up to the slowest clock's stop -1.6s.
		from, to := bubbleStart.Add(2*time.Second), bubbleStart.Add(28*time.Second)
		for sl := from; !sl.After(to); sl = sl.Add(time.Second) {
			if n := perSlot[sl.Unix()]; n != 1 {
				e.sink.dump(t)
				t.Fatalf("slot %s ran %d times", slotString(sl), n)
			}
		}
		for sl, n := range perSlot {
			if n > 1 {
				t.Errorf("slot %d ran %d times", sl, n)
			}
		}
		evs := e.sink.events(t)
		for _, sk := range where(evs, "slot.skipped") {
			sl, _ := time.Parse(time.RFC3339, sk.str("slot"))
			if sl.Before(from) || sl.After(to) {
				continue // at the edges a lone replica may find a newer slot's run going on (overlap)
			}
			if r := sk.str("reason"); (r != "held" && r != "done") || sk.str("level") != "DEBUG" {
				t.Errorf("unexpected skip: %v", sk)
			}
		}
		if len(where(evs, "slot.skipped", "reason", "done")) == 0 {
			t.Errorf("no replica ever found a done marker")
		}
	})
}

// TestOverlapForbid: a job that runs 2.5s every second never overlaps
// itself; the slots in between are skipped with reason overlap (info) and
// marked done; fencing tokens strictly increase.
func TestOverlapForbid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{d: 2500 * time.Millisecond, now: time.Now}
		s1 := e.scheduler("r1", nil, everySecond(t, "long", rec))
		s2 := e.scheduler("r2", newJumpClock(500*time.Millisecond), everySecond(t, "long", rec))
		stop1, stop2 := running(t, s1), running(t, s2)
		time.Sleep(20 * time.Second)
		stop1()
		stop2()
		runs := rec.all()
		if len(runs) < 5 {
			t.Fatalf("only %d runs", len(runs))
		}
		for i := 1; i < len(runs); i++ {
			if runs[i].Start.Before(runs[i-1].End) {
				t.Errorf("run %d started %v before run %d ended %v", i, runs[i].Start, i-1, runs[i-1].End)
			}
			if runs[i].Run.FencingToken <= runs[i-1].Run.FencingToken {
				t.Errorf("tokens not increasing: %d then %d", runs[i-1].Run.FencingToken, runs[i].Run.FencingToken)
			}
		}
		evs := e.sink.events(t)
		overlap := where(evs, "slot.skipped", "reason", "overlap")
		if len(overlap) < 10 {
			t.Errorf("%d overlap skips, want most slots", len(overlap))
		}
		for _, o := range overlap {
			if o.str("level") != "INFO" || o.str("holder") != "local" {
				t.Errorf("overlap skip: %v", o)
			}
		}
		// Every slot is explained once: a run or an overlap skip, not both.
		explained := map[string]int{}
		for _, o := range overlap {
			explained[o.str("slot")]++
		}
		for _, r := range runs {
			explained[slotString(r.Run.Slot)]++
		}
		for sl, n := range explained {
			if n != 1 {
				t.Errorf("slot %s explained %d times", sl, n)
			}
		}
	})
}

// TestOverlapAllow: with overlap allow, runs of successive slots overlap.
func TestOverlapAllow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{d: 2500 * time.Millisecond, now: time.Now}
		spec := everySecond(t, "par", rec)
		spec.Overlap = OverlapAllow
		s := e.scheduler("r1", nil, spec)
		stop := running(t, s)
		time.Sleep(10*time.Second + 500*time.Millisecond)
		stop()
		runs := rec.all()
		// slots 1..10 all start; those still running at stop finish within grace
		if len(runs) != 10 {
			t.Fatalf("%d runs, want 10", len(runs))
		}
		if !runs[1].Start.Before(runs[0].End) {
			t.Errorf("runs did not overlap")
		}
		if n := len(where(e.sink.events(t), "slot.skipped")); n != 0 {
			t.Errorf("%d skips", n)
		}
	})
}

// TestTrigger: a manual slot succeeds (nil), fails (error), and is refused
// while a scheduled run holds the job under overlap forbid.
func TestTrigger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{d: 2 * time.Second, now: time.Now}
		sched, _ := ParseSchedule("0 0 * * * *", time.UTC)
		spec := JobSpec{Name: "manual", Schedule: sched, Job: rec}
		s := e.scheduler("r1", nil, spec)
		ctx := context.Background()
		if err := s.Trigger(ctx, "manual"); err != nil {
			t.Fatalf("Trigger: %v", err)
		}
		runs := rec.all()
		if len(runs) != 1 || !runs[0].Run.Manual || !runs[0].Run.Slot.IsZero() || runs[0].Run.SlotString() != "manual" {
			t.Fatalf("runs: %+v", runs)
		}
		evs := e.sink.events(t)
		if ok := where(evs, "run.succeeded", "slot", "manual", "run_id", runs[0].Run.RunID); len(ok) != 1 {
			t.Errorf("no run.succeeded for the manual slot: %v", evs)
		}
		if err := s.Trigger(ctx, "nope"); !errors.Is(err, ErrUnknownJob) {
			t.Errorf("unknown job: %v", err)
		}
		rec.fail.Store(1)
		if err := s.Trigger(ctx, "manual"); !errors.Is(err, ErrRunFailed) {
			t.Errorf("failed run: %v", err)
		}
		// A run holds the job: a concurrent trigger is refused.
		done := make(chan error)
		go func() { done <- s.Trigger(ctx, "manual") }()
		time.Sleep(time.Second)
		err := s.Trigger(ctx, "manual")
		if !errors.Is(err, locking.ErrNotAcquired) {
			t.Errorf("trigger during a run: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("first trigger: %v", err)
		}
		if n := len(where(e.sink.events(t), "slot.skipped", "slot", "manual", "reason", "overlap")); n != 1 {
			t.Errorf("%d overlap skips for the refused trigger", n)
		}
		// tokens increase across manual runs
		runs = rec.all()
		for i := 1; i < len(runs); i++ {
			if runs[i].Run.FencingToken <= runs[i-1].Run.FencingToken {
				t.Errorf("tokens %d then %d", runs[i-1].Run.FencingToken, runs[i].Run.FencingToken)
			}
		}
		// Canceling the caller's ctx cancels the run with reason shutdown.
		cctx, cancel := context.WithCancel(ctx)
		go func() { time.Sleep(500 * time.Millisecond); cancel() }()
		if err := s.Trigger(cctx, "manual"); !errors.Is(err, ErrRunFailed) {
			t.Errorf("canceled trigger: %v", err)
		}
		if c := where(e.sink.events(t), "run.canceled", "slot", "manual"); len(c) != 1 || c[0].str("reason") != "shutdown" {
			t.Errorf("run.canceled: %v", c)
		}
	})
}

// TestDisabledJobNeverFires, but can be triggered.
func TestDisabledJobNeverFires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{now: time.Now}
		spec := everySecond(t, "off", rec)
		spec.Disabled = true
		s := e.scheduler("r1", nil, spec)
		stop := running(t, s)
		time.Sleep(5 * time.Second)
		if err := s.Trigger(context.Background(), "off"); err != nil {
			t.Fatal(err)
		}
		stop()
		if runs := rec.all(); len(runs) != 1 || !runs[0].Run.Manual {
			t.Fatalf("runs: %+v", runs)
		}
	})
}

func TestNewValidates(t *testing.T) {
	sched, _ := ParseSchedule("@hourly", nil)
	j := funcJob(func(context.Context, jobs.Run) error { return nil })
	ok := JobSpec{Name: "a", Schedule: sched, Job: j}
	local := locking.NewLocal(locking.Options{})
	cases := []struct {
		name string
		cfg  Config
	}{
		{"no locker", Config{Jobs: []JobSpec{ok}}},
		{"duplicate", Config{Locker: local, Jobs: []JobSpec{ok, ok}}},
		{"no schedule", Config{Locker: local, Jobs: []JobSpec{{Name: "b", Job: j}}}},
		{"no job", Config{Locker: local, Jobs: []JobSpec{{Name: "b", Schedule: sched}}}},
		{"bad overlap", Config{Locker: local, Jobs: []JobSpec{{Name: "b", Schedule: sched, Job: j, Overlap: "sometimes"}}}},
		{"bad misfire", Config{Locker: local, Jobs: []JobSpec{{Name: "b", Schedule: sched, Job: j, Misfire: Misfire{Policy: "twice"}}}}},
		{"lateness too large", Config{Locker: local, MaxClockSkew: time.Second, Lateness: 3 * time.Second}},
	}
	for _, c := range cases {
		if _, err := New(c.cfg); err == nil {
			t.Errorf("%s: New accepted it", c.name)
		}
	}
	s, err := New(Config{Locker: local, Jobs: []JobSpec{ok}})
	if err != nil {
		t.Fatal(err)
	}
	if s.Lateness() != 3*time.Second || s.DoneTTL() != 30*time.Second {
		t.Errorf("defaults: lateness %v, done ttl %v", s.Lateness(), s.DoneTTL())
	}
	s, _ = New(Config{Locker: local, LockTTL: time.Second, MaxClockSkew: 5 * time.Second})
	if s.DoneTTL() != 2*5*time.Second+6*time.Second+2*time.Second {
		t.Errorf("done ttl %v", s.DoneTTL())
	}
	if err := s.Healthy(); err == nil {
		t.Errorf("Healthy before Run: nil")
	}
	s, _ = New(Config{Locker: local, Jobs: []JobSpec{ok}})
	next, err := s.Next("a", time.Date(2026, 1, 1, 0, 30, 0, 0, time.UTC), 3)
	if err != nil || len(next) != 3 || next[0].Hour() != 1 || next[2].Hour() != 3 {
		t.Errorf("Next: %v %v", next, err)
	}
}
