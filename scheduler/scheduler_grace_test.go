package scheduler

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// Shutdown: a run finishes within the grace, and is canceled after it.

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
