package scheduler

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// A run's life past its start: retried, exhausted, timed out, its lock
// lost, its lease lapsed before it began.

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
