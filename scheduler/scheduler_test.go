package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/locksim"
	"github.com/slotlock/slotlock/locking/redlock"
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

// TestRetryBackoff: failed attempts are retried within the slot with
// doubling backoff, under the same run id and token; run.retrying says when.
func TestRetryBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{now: time.Now}
		rec.fail.Store(2)
		sched, _ := ParseSchedule("@every 1m", time.UTC)
		spec := JobSpec{Name: "flaky", Schedule: sched, Job: rec,
			Retry: Retry{Max: 3, Backoff: time.Second}}
		s := e.scheduler("r1", nil, spec)
		stop := running(t, s)
		time.Sleep(70 * time.Second)
		stop()
		runs := rec.all()
		if len(runs) != 3 {
			t.Fatalf("%d attempts, want 3", len(runs))
		}
		slot := bubbleStart.Add(time.Minute)
		for i, r := range runs {
			if r.Run.Attempt != i+1 || r.Run.RunID != runs[0].Run.RunID || r.Run.FencingToken != runs[0].Run.FencingToken || !r.Run.Slot.Equal(slot) {
				t.Errorf("attempt %d: %+v", i, r.Run)
			}
		}
		if d := runs[1].Start.Sub(runs[0].End); d != time.Second {
			t.Errorf("first backoff %v, want 1s", d)
		}
		if d := runs[2].Start.Sub(runs[1].End); d != 2*time.Second {
			t.Errorf("second backoff %v, want 2s", d)
		}
		evs := e.sink.events(t)
		retrying := where(evs, "run.retrying")
		if len(retrying) != 2 || retrying[0].str("backoff") != "1s" || retrying[1].str("backoff") != "2s" ||
			retrying[0].num("attempt") != 1 || retrying[0].str("error") != "planned failure" || retrying[0].str("level") != "WARN" {
			t.Errorf("run.retrying: %v", retrying)
		}
		ok := where(evs, "run.succeeded")
		if len(ok) != 1 || ok[0].num("attempt") != 3 || ok[0].num("duration_ms") != 3000 {
			t.Errorf("run.succeeded: %v", ok)
		}
		if len(where(evs, "run.started")) != 1 {
			t.Errorf("run.started must be logged once per run")
		}
	})
}

// TestRetryExhausted: after Max retries the run fails with the last error.
func TestRetryExhausted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{now: time.Now}
		rec.fail.Store(100)
		sched, _ := ParseSchedule("@every 1m", time.UTC)
		spec := JobSpec{Name: "broken", Schedule: sched, Job: rec,
			Retry: Retry{Max: 1, Backoff: time.Second}}
		s := e.scheduler("r1", nil, spec)
		stop := running(t, s)
		time.Sleep(65 * time.Second)
		stop()
		evs := e.sink.events(t)
		failed := where(evs, "run.failed")
		if len(failed) != 1 || failed[0].num("attempt") != 2 || failed[0].str("error") != "planned failure" ||
			failed[0].str("error_class") != "error" || failed[0].str("level") != "ERROR" {
			t.Errorf("run.failed: %v", failed)
		}
		_, err := e.locker.Acquire(context.Background(), history.SlotKey("broken", bubbleStart.Add(time.Minute)), time.Second)
		var held *locking.HeldError
		if !errors.As(err, &held) || !held.Done || held.Note != "failed" {
			t.Errorf("slot after a failed run: %v (a failed slot is done, not retried by others)", err)
		}
		if e.metrics.get("broken/failed", true) != 1 {
			t.Errorf("metrics: %v", e.metrics.runs)
		}
	})
}

// TestTimeout: the job's timeout cancels the run with cause ErrTimeout;
// retries do not extend it.
func TestTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{d: time.Hour, now: time.Now}
		sched, _ := ParseSchedule("@every 1m", time.UTC)
		spec := JobSpec{Name: "slow", Schedule: sched, Job: rec, Timeout: 3 * time.Second,
			Retry: Retry{Max: 2, Backoff: time.Second}}
		s := e.scheduler("r1", nil, spec)
		stop := running(t, s)
		time.Sleep(65 * time.Second)
		stop()
		runs := rec.all()
		if len(runs) != 1 || !errors.Is(runs[0].Cause, ErrTimeout) || runs[0].End.Sub(runs[0].Start) != 3*time.Second {
			t.Fatalf("runs: %+v", runs)
		}
		c := where(e.sink.events(t), "run.canceled")
		if len(c) != 1 || c[0].str("reason") != "timeout" || c[0].str("level") != "WARN" || c[0].num("duration_ms") != 3000 {
			t.Errorf("run.canceled: %v", c)
		}
	})
}

// TestLockLost: a replica paused past its lease (modeled by jumping its
// clock) cancels its run with lock.lost and run.canceled reason lock_lost.
func TestLockLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		clock := newJumpClock(0)
		e.locker = locking.NewLocal(locking.Options{Replica: "local", Clock: clock})
		rec := &recorder{d: time.Hour, now: time.Now}
		sched, _ := ParseSchedule("@every 1h", time.UTC)
		spec := JobSpec{Name: "victim", Schedule: sched, Job: rec}
		s := e.scheduler("r1", clock, spec)
		stop := running(t, s)
		time.Sleep(time.Hour + 5*time.Second)
		clock.jump(time.Minute) // "paused" for a minute: both leases expired
		time.Sleep(15 * time.Second)
		runs := rec.all()
		if len(runs) != 1 || !errors.Is(runs[0].Cause, locking.ErrLockLost) {
			t.Fatalf("runs: %+v", runs)
		}
		stop()
		evs := e.sink.events(t)
		// Both leases (claim and job lease) expired, but lock.lost is
		// one line per run, naming the first lost lease's key.
		lost := where(evs, "lock.lost")
		if len(lost) != 1 || lost[0].str("level") != "ERROR" || lost[0].str("run_id") != runs[0].Run.RunID ||
			lost[0].str("key") == "" {
			t.Errorf("lock.lost: want one line for the run, got %v", lost)
		}
		c := where(evs, "run.canceled")
		if len(c) != 1 || c[0].str("reason") != "lock_lost" {
			t.Errorf("run.canceled: %v", c)
		}
		if e.metrics.lost != 1 {
			t.Errorf("LeaseLost called %d times, want once per lost run", e.metrics.lost)
		}
	})
}

// pauseAfterJobLease models a replica paused after every guard of slot
// at passed, just before the run: its clock (the locker's and the
// scheduler's) jumps by d right after the job lease is granted. Claims
// are taken without the joint job lease (as when it was held at the
// claim), so the scheduler takes it by its own Acquire, the last call
// before the run.
type pauseAfterJobLease struct {
	locking.Locker
	clock *jumpClock
	at    time.Time
	d     time.Duration
	armed atomic.Bool
}

func (p *pauseAfterJobLease) Claim(ctx context.Context, key locking.Key, ttl time.Duration, _ ...locking.ClaimOption) (*locking.Lease, error) {
	l, err := p.Locker.Claim(ctx, key, ttl)
	if err == nil && key == history.SlotKey(key.Family, p.at) {
		p.armed.Store(true)
	}
	return l, err
}

func (p *pauseAfterJobLease) Acquire(ctx context.Context, key locking.Key, ttl time.Duration) (*locking.Lease, error) {
	l, err := p.Locker.Acquire(ctx, key, ttl)
	if err == nil && key == history.RunKey(key.Family) && p.armed.CompareAndSwap(true, false) {
		p.clock.jump(p.d)
	}
	return l, err
}

// TestLeaseLapsedBeforeTheRunStarts: a replica paused past its leases
// after its last guard and before the body's start (the simulation, seed 127942:
// another replica had reported the slot as one that may have started
// meanwhile) never starts the body: no run.started, no run line, one
// lock.lost and one slot.skipped slow_lock; the next slot runs as usual.
func TestLeaseLapsedBeforeTheRunStarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		clock := newJumpClock(0)
		slot := bubbleStart.Add(time.Hour)
		e.locker = &pauseAfterJobLease{Locker: locking.NewLocal(locking.Options{Replica: "local", Clock: clock}),
			clock: clock, at: slot, d: time.Minute}
		rec := &recorder{now: time.Now}
		sched, _ := ParseSchedule("@every 1h", time.UTC)
		s := e.scheduler("r1", clock, JobSpec{Name: "victim", Schedule: sched, Job: rec})
		stop := running(t, s)
		time.Sleep(2*time.Hour + 5*time.Second)
		stop()
		runs := rec.all()
		if len(runs) != 1 || !runs[0].Run.Slot.Equal(slot.Add(time.Hour)) || runs[0].Err != nil {
			e.sink.dump(t)
			t.Fatalf("runs: %+v; want only the next slot's, %v", runs, slot.Add(time.Hour))
		}
		evs := e.sink.events(t)
		if started := where(evs, "run.started", "slot", slotString(slot)); len(started) != 0 {
			t.Errorf("run.started for the slot whose leases lapsed before its start: %v", started)
		}
		lost := where(evs, "lock.lost", "slot", slotString(slot))
		if len(lost) != 1 || lost[0].str("level") != "ERROR" || lost[0].str("run_id") == "" {
			t.Errorf("lock.lost for slot %s: want one line, got %v", slotString(slot), lost)
		}
		skip := where(evs, "slot.skipped", "slot", slotString(slot))
		if len(skip) != 1 || skip[0].str("reason") != string(history.ReasonSlowLock) || skip[0].str("level") != "WARN" {
			t.Errorf("slot.skipped for slot %s: want one, reason slow_lock at warn (the slot is explained here), got %v", slotString(slot), skip)
		}
		if n := len(where(evs, "run.succeeded")); n != 1 {
			t.Errorf("%d run.succeeded, want the next slot's", n)
		}
	})
}

// TestShutdownLetsRunFinish: a run going on when Run's ctx ends finishes
// within the grace; no new slot is fired; the job lease is free afterwards.
func TestShutdownLetsRunFinish(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{d: 3 * time.Second, now: time.Now}
		s := e.scheduler("r1", nil, everySecond(t, "job", rec))
		stop := running(t, s)
		time.Sleep(1500 * time.Millisecond) // slot 1 running until 4s
		stop()
		stopped := time.Now()
		runs := rec.all()
		if len(runs) != 1 || runs[0].Err != nil {
			t.Fatalf("runs: %+v", runs)
		}
		if !stopped.Equal(runs[0].End) {
			t.Errorf("Run returned at %v, want when the run ended, %v", stopped, runs[0].End)
		}
		if n := len(where(e.sink.events(t), "run.succeeded")); n != 1 {
			t.Errorf("%d run.succeeded", n)
		}
		l, err := e.locker.Acquire(context.Background(), history.RunKey("job"), time.Second)
		if err != nil {
			t.Fatalf("job lease after shutdown: %v", err)
		}
		l.End(context.Background(), locking.Ending{})
	})
}

// TestShutdownCancelsAfterGrace: a run longer than the grace is canceled
// with reason shutdown; Run returns nil; the slot is marked done and the
// job lease released.
func TestShutdownCancelsAfterGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{d: time.Hour, now: time.Now}
		s := e.scheduler("r1", nil, everySecond(t, "job", rec))
		stop := running(t, s)
		time.Sleep(1500 * time.Millisecond)
		began := time.Now()
		stop()
		if d := time.Since(began); d != 5*time.Second {
			t.Errorf("Run returned after %v, want the 5s grace", d)
		}
		runs := rec.all()
		if len(runs) != 1 || !errors.Is(runs[0].Cause, ErrShutdown) {
			t.Fatalf("runs: %+v", runs)
		}
		c := where(e.sink.events(t), "run.canceled")
		if len(c) != 1 || c[0].str("reason") != "shutdown" {
			t.Errorf("run.canceled: %v", c)
		}
		if _, err := e.locker.Acquire(context.Background(), history.RunKey("job"), time.Second); err != nil {
			t.Errorf("job lease after shutdown: %v", err)
		}
		_, err := e.locker.Acquire(context.Background(), history.SlotKey("job", bubbleStart.Add(time.Second)), time.Second)
		var held *locking.HeldError
		if !errors.As(err, &held) || !held.Done || held.Note != "canceled" {
			t.Errorf("slot after a canceled run: %v", err)
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

// faultyEverySecond runs replica r1 with one every-second job over a
// faultyLocker, for the lock-retry tests below: its env, the locker to
// inject faults with, the job's runs, and its stop.
func faultyEverySecond(t *testing.T) (*env, *faultyLocker, *recorder, func()) {
	e := newEnv(t)
	f := &faultyLocker{Locker: e.locker}
	e.locker = f
	rec := &recorder{now: time.Now}
	s := e.scheduler("r1", nil, everySecond(t, "job", rec))
	return e, f, rec, running(t, s)
}

// requireOneRunOfSlot1 fails unless rec holds one run, of slot 1, started
// lo to hi after it was due (after the faults named).
func requireOneRunOfSlot1(t *testing.T, e *env, rec *recorder, lo, hi time.Duration, after string) {
	t.Helper()
	runs := rec.all()
	if len(runs) != 1 || !runs[0].Run.Slot.Equal(bubbleStart.Add(time.Second)) {
		e.sink.dump(t)
		t.Fatalf("runs: %+v", runs)
	}
	if d := runs[0].Start.Sub(runs[0].Run.Slot); d < lo || d > hi {
		t.Errorf("start delay %v after %s", d, after)
	}
}

// TestSplitVoteRetried: a split vote is retried while the slot is fresh,
// so the slot still runs, once.
func TestSplitVoteRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, f, rec, stop := faultyEverySecond(t)
		time.Sleep(500 * time.Millisecond)
		f.split.Store(3)
		time.Sleep(time.Second)
		stop()
		requireOneRunOfSlot1(t, e, rec, 3*time.Millisecond, 20*time.Millisecond, "3 split votes")
		if n := len(where(e.sink.events(t), "slot.skipped")); n != 0 {
			t.Errorf("%d skips", n)
		}
	})
}

// TestUnconfirmedHoldRetried: a claim refused by another replica's claim
// that no store shows started, while a store does not hold it (a replica
// whose answers are lost or late leaves its failed claim there until its
// undo follows), is asked again while the slot is fresh: the slot runs
// once, a little late. Refused by a claim held everywhere (its winner's),
// it is skipped held, asked once.
func TestUnconfirmedHoldRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, f, rec, stop := faultyEverySecond(t)
		time.Sleep(500 * time.Millisecond)
		f.unconfirmed.Store(3)
		time.Sleep(time.Second) // slot 1 runs
		f.held.Store(1)
		before := f.acquires.Load()
		time.Sleep(time.Second) // slot 2 skipped
		claims := f.acquires.Load() - before
		stop()
		// Three refusals: backoffs of 25-37, 50-75 and 100-150 ms.
		requireOneRunOfSlot1(t, e, rec, 175*time.Millisecond, 270*time.Millisecond, "3 unconfirmed holds")
		sk := where(e.sink.events(t), "slot.skipped")
		if len(sk) != 1 || sk[0].str("reason") != "held" || sk[0].str("slot") != bubbleStart.Add(2*time.Second).UTC().Format(time.RFC3339) {
			t.Errorf("skips: %v", sk)
		}
		if claims != 1 {
			t.Errorf("slot 2, held by a live claim, was asked %d times", claims)
		}
	})
}

// TestTransientNoQuorumRetried: an Acquire that fails for lack of a
// majority (one node down, another stalled for a moment) is retried after
// a short backoff while the slot is fresh: the slot runs once, a little
// late, and nothing is logged as skipped (e2e-2).
func TestTransientNoQuorumRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, f, rec, stop := faultyEverySecond(t)
		time.Sleep(500 * time.Millisecond)
		f.blip.Store(3)
		time.Sleep(time.Second)
		stop()
		// Three failures: backoffs of 20-30, 40-60 and 80-120 ms.
		requireOneRunOfSlot1(t, e, rec, 140*time.Millisecond, 220*time.Millisecond, "3 quorum failures")
		if sk := where(e.sink.events(t), "slot.skipped"); len(sk) != 0 {
			t.Errorf("skips: %v", sk)
		}
	})
}

// TestNoQuorumLoggedWhenFreshnessRunsOut: while no majority answers, a slot
// is retried until its freshness (slot + lateness bound) runs out and only
// then logged as no_quorum; shutdown ends the retries at once.
func TestNoQuorumLoggedWhenFreshnessRunsOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		f := &faultyLocker{Locker: e.locker}
		e.locker = f
		rec := &recorder{now: time.Now}
		s := e.scheduler("r1", nil, everySecond(t, "job", rec))
		stop := running(t, s)
		time.Sleep(500 * time.Millisecond)
		f.down.Store(true)
		time.Sleep(3200 * time.Millisecond) // at 3.7s slot 1 is still fresh (until 4s); slots 2..4 retry beyond 4.2s
		nq := where(e.sink.events(t), "slot.skipped", "reason", "no_quorum")
		if len(nq) != 0 {
			t.Fatalf("no_quorum logged while slot 1 is fresh: %v", nq)
		}
		time.Sleep(500 * time.Millisecond)
		nq = where(e.sink.events(t), "slot.skipped", "reason", "no_quorum")
		if len(nq) != 1 || nq[0].str("slot") != slotAt(1) || nq[0].str("level") != "WARN" || nq[0].str("error") == "" {
			stop()
			e.sink.dump(t)
			t.Fatalf("no_quorum lines: %v", nq)
		}
		at, _ := time.Parse(time.RFC3339Nano, nq[0].str("time"))
		if lo, hi := bubbleStart.Add(time.Second+s.Lateness()-300*time.Millisecond), bubbleStart.Add(time.Second+s.Lateness()); at.Before(lo) || !at.Before(hi) {
			t.Errorf("no_quorum for slot 1 logged at %v, want just before its freshness ends (%v)", at, hi)
		}
		began := time.Now()
		stop()
		if d := time.Since(began); d != 0 {
			t.Errorf("Run returned %v after its ctx ended; quorum retries must stop at once", d)
		}
		if len(rec.all()) != 0 {
			t.Errorf("ran without a quorum")
		}
		if n := len(where(e.sink.events(t), "slot.skipped", "reason", "no_quorum")); n != 1 {
			t.Errorf("%d no_quorum lines; slots whose retries shutdown ended are not logged", n)
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

// TestRecordLagBounded: the job's last-slot record is written lazily but
// never lags the latest handled slot by doneTTL/2 or more, and is exact
// after a clean stop.
func TestRecordLagBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		f := &countingRecords{Store: locksim.NewStore("s0")}
		l, err := redlock.OnNodes([]driver.Node{f}, "", 0, locking.Options{Replica: "local"})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		e.locker = l
		rec := &recorder{now: time.Now}
		s := e.scheduler("r1", nil, everySecond(t, "job", rec))
		stop := running(t, s)
		time.Sleep(500 * time.Millisecond)
		for range 60 {
			time.Sleep(time.Second) // at n.5s, slot n has run
			r, _ := e.locker.ReadRecord(context.Background(), history.LastKey("job"))
			latest := time.Now().Truncate(time.Second).Unix()
			if lag := time.Duration(latest-r) * time.Second; r == 0 || lag >= s.DoneTTL()/2 {
				t.Errorf("at %v the record lags %v", time.Since(bubbleStart), lag)
				break
			}
		}
		stop()
		if r, _ := e.locker.ReadRecord(context.Background(), history.LastKey("job")); r != bubbleStart.Unix()+60 {
			t.Errorf("record after stop %d", r-bubbleStart.Unix())
		}
		if n := f.writes.Load(); n > 12 {
			t.Errorf("%d record writes for 60 slots, want about one per doneTTL/4", n)
		}
	})
}

// countingRecords is a lock store node that counts the record writes it
// is asked for: alone (Store.AdvanceRecord) or with a lease's end
// (Ending.Record).
type countingRecords struct {
	*locksim.Store
	writes atomic.Int32
}

func (c *countingRecords) Addr() string { return c.Name() }
func (c *countingRecords) Close() error { return nil }

func (c *countingRecords) Do(_ context.Context, op driver.Op) (driver.Result, error) {
	switch o := op.(type) {
	case driver.MaxSetOp:
		c.writes.Add(1)
	case driver.ReleaseOp:
		if o.RecordN != 0 {
			c.writes.Add(1)
		}
	}
	return c.Apply(op)
}

// A running scheduler whose Config.Fit refuses is not healthy, with Fit's
// reason, and is again once Fit is content.
func TestHealthyAsksFit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		var unfit atomic.Bool
		blocked := errors.New("log output blocked for 2s")
		s, err := New(Config{
			Replica: "r1", Locker: e.locker, Logger: e.sink.logger("r1"), LockTTL: 30 * time.Second,
			Fit: func() error {
				if unfit.Load() {
					return blocked
				}
				return nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		stop := running(t, s)
		defer stop()
		time.Sleep(2 * time.Second)
		if err := s.Healthy(); err != nil {
			t.Fatalf("Healthy while fit: %v", err)
		}
		unfit.Store(true)
		if err := s.Healthy(); !errors.Is(err, blocked) {
			t.Fatalf("Healthy while unfit = %v, want Fit's error", err)
		}
		unfit.Store(false)
		if err := s.Healthy(); err != nil {
			t.Fatalf("Healthy once fit again: %v", err)
		}
	})
}
