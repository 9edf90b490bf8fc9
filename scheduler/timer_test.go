package scheduler

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fakeTimerDeps stands for admission, the misfire policy, the fleet's
// ranks and the records around a timer built alone: every odd second's
// slot is a fallback's here.
type fakeTimerDeps struct {
	mu        sync.Mutex
	fired     []time.Time
	fallbacks []time.Time
	late      []lateRange
}

func (f *fakeTimerDeps) fireSlot(j *job, t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fired = append(f.fired, t)
}

func (f *fakeTimerDeps) checkHandled(checks []dueSlot) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, d := range checks {
		f.fallbacks = append(f.fallbacks, d.t)
	}
}

func (f *fakeTimerDeps) handle(j *job, late lateRange) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.late = append(f.late, late)
}

func (f *fakeTimerDeps) slotDelay(job string, t time.Time) (time.Duration, slotRole) {
	if t.Unix()%2 == 1 {
		return 0, roleFallback
	}
	return 0, roleCandidate
}

func (f *fakeTimerDeps) fallbackDelay(j *job, t time.Time) time.Duration {
	return 100 * time.Millisecond
}
func (f *fakeTimerDeps) dropView()          {}
func (f *fakeTimerDeps) flushRecord(j *job) {}

// TestTimerAlone: a timer built over fakes fires each slot of an
// every-second job once, at its due time: to admission as a candidate,
// or (odd seconds) to the fallback check; slots it wakes too late for
// (its clock jumped) go to the misfire policy, once, as one range.
func TestTimerAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newEnv(t)
		clock := newJumpClock(0)
		e := testEngine(t, Config{Replica: "r1", Locker: env.locker, Clock: clock,
			Jobs: []JobSpec{everySecond(t, "tick", &recorder{now: time.Now})}})
		f := &fakeTimerDeps{}
		tm := newTimer(e, f, f, f, f)
		ctx, stop := context.WithCancel(context.Background())
		start := clock.Now()
		done := make(chan struct{})
		go func() { tm.loop(ctx, start); close(done) }()
		time.Sleep(4*time.Second + 500*time.Millisecond)
		synctest.Wait()
		if n := len(f.fired) + len(f.fallbacks); n != 4 || len(f.fired) != 2 || len(f.late) != 0 {
			t.Errorf("fired %v, fallbacks %v, late %v: want four slots, two each way", f.fired, f.fallbacks, f.late)
		}
		clock.jump(30 * time.Second)
		time.Sleep(time.Second)
		synctest.Wait()
		stop()
		<-done
		if len(f.late) != 1 || f.late[0].count < 20 {
			t.Errorf("late %+v, want one range of the slots the jump skipped", f.late)
		}
		if age := clock.Now().Sub(time.Unix(0, tm.heartbeat.Load())); age > time.Second {
			t.Errorf("the loop's last tick is %v old", age)
		}
	})
}
