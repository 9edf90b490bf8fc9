package scheduler

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// fakeAttempts records the slots given to the attempt pipeline and
// answers each with a succeeded entry.
type fakeAttempts struct {
	mu    sync.Mutex
	slots []time.Time
	kinds []origin
}

func (f *fakeAttempts) attemptSlot(j *job, t time.Time, o origin, caller context.Context) (*history.Entry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.slots, f.kinds = append(f.slots, t), append(f.kinds, o)
	return &history.Entry{Slot: slotString(t), Outcome: history.OutcomeSucceeded}, nil
}

// fixedWindow is the replicas' window: slots younger than it are theirs.
type fixedWindow time.Duration

func (w fixedWindow) after(*job) time.Duration { return time.Duration(w) }

// controlAlone is a control component over fakes, its job "tick" firing
// every second, a minute after the bubble's start.
func controlAlone(t *testing.T) (*env, *control, *fakeAttempts) {
	env := newEnv(t)
	e := testEngine(t, Config{Replica: "r1", Locker: env.locker, Logger: env.sink.logger("r1"), Metrics: env.metrics,
		Jobs: []JobSpec{everySecond(t, "tick", &recorder{now: time.Now})}})
	attempts := &fakeAttempts{}
	time.Sleep(time.Minute)
	return env, newControl(e, attempts, fixedWindow(10*time.Second)), attempts
}

// TestControlAloneRunsThroughTheAttempt: control built alone over a fake
// attempt pipeline and window. A trigger is a manual attempt; a backfill
// of a slot an attempt with origin backfill, and only of a slot of the
// schedule older than the window; a plan runs the slots with no outcome.
func TestControlAloneRunsThroughTheAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env, c, attempts := controlAlone(t)
		ctx := context.Background()
		if _, err := c.trigger(ctx, "nope"); !errors.Is(err, ErrUnknownJob) {
			t.Errorf("trigger of an unknown job: %v", err)
		}
		if _, err := c.trigger(ctx, "tick"); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-30 * time.Second).Truncate(time.Second)
		if _, err := c.runSlot(ctx, "tick", old.Add(500*time.Millisecond)); !errors.Is(err, ErrBackfillWindow) {
			t.Errorf("backfill of a time that is no slot: %v", err)
		}
		if _, err := c.runSlot(ctx, "tick", time.Now().Add(-5*time.Second).Truncate(time.Second)); !errors.Is(err, ErrBackfillWindow) {
			t.Errorf("backfill of a slot still the replicas': %v", err)
		}
		if _, err := c.runSlot(ctx, "tick", old); err != nil {
			t.Fatal(err)
		}
		if len(attempts.kinds) != 2 || attempts.kinds[0] != originManual || attempts.kinds[1] != originBackfill ||
			!attempts.slots[0].IsZero() || !attempts.slots[1].Equal(old) {
			t.Errorf("attempts %v of %v, want a manual one and the backfill of %v", attempts.kinds, attempts.slots, old)
		}
		ran := history.Entry{Slot: slotString(old), Outcome: history.OutcomeSucceeded}
		if err := env.locker.AppendLog(ctx, "tick", locking.LogAppend{Entry: ran.LogEntry(old), Keep: 100}); err != nil {
			t.Fatal(err)
		}
		plan, err := c.planBackfill(ctx, "tick", old, old.Add(time.Second))
		if err != nil || len(plan) != 2 || plan[0].Run || !plan[1].Run {
			t.Errorf("plan %+v (%v), want the recorded slot kept and the next one run", plan, err)
		}
	})
}

// TestControlAlonePausesOnFailure: after PauseOnFailure failed slots in
// the history, control pauses the job, and notes the pause once.
func TestControlAlonePausesOnFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env, c, _ := controlAlone(t)
		ctx := context.Background()
		j, _ := c.job("tick")
		j.spec.PauseOnFailure = 2
		for i := range 2 {
			at := time.Now().Add(time.Duration(i-10) * time.Second).Truncate(time.Second)
			failed := history.Entry{Slot: slotString(at), Outcome: history.OutcomeFailed}
			if err := env.locker.AppendLog(ctx, "tick", locking.LogAppend{Entry: failed.LogEntry(at), Keep: 100}); err != nil {
				t.Fatal(err)
			}
		}
		c.pauseOnFailure(j)
		p, err := env.locker.ReadPause(ctx, "tick")
		if err != nil || !p.ActiveAt(time.Now()) || p.By != "r1" {
			t.Fatalf("pause %+v (%v), want one by r1", p, err)
		}
		c.notePause(j, p)
		c.notePause(j, p)
		if n := len(where(env.sink.events(t), EventJobPaused, "job", "tick")); n != 2 {
			t.Errorf("%d job.paused lines, want 2: the pause, and this replica noting it once", n)
		}
	})
}
