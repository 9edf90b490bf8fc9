package scheduler

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// stubborn is a job that ignores its canceled context for ignore, like an
// exec job whose process traps SIGTERM until the plugin's SIGKILL, then
// returns an error.
type stubborn struct {
	ignore time.Duration
	ended  chan struct{}
}

func (j *stubborn) Run(ctx context.Context, run jobs.Run) error {
	<-ctx.Done()
	time.Sleep(j.ignore)
	close(j.ended)
	return errors.New("signal: killed")
}

// TestShutdownWaitsForCanceledRuns: a run that takes 7s to return after
// its cancel at the end of the grace (exec: SIGTERM ignored, SIGKILL after
// the kill grace) is waited for: Run returns when it returned, it is
// logged as run.canceled reason shutdown, its slot is marked done and its
// job lease released (AUDIT-1).
func TestShutdownWaitsForCanceledRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		job := &stubborn{ignore: 7 * time.Second, ended: make(chan struct{})}
		sched, _ := ParseSchedule("@every 1m", time.UTC)
		s := e.scheduler("r1", nil, JobSpec{Name: "stubborn", Schedule: sched, Job: job})
		stop := running(t, s)
		time.Sleep(time.Minute + time.Second)
		began := time.Now()
		stop()
		if d := time.Since(began); d != 5*time.Second+7*time.Second {
			t.Errorf("Run returned after %v, want grace 5s + the 7s the run took to return", d)
		}
		select {
		case <-job.ended:
		default:
			t.Fatalf("Run returned before the canceled run did")
		}
		evs := e.sink.events(t)
		c := where(evs, "run.canceled", "job", "stubborn")
		if len(c) != 1 || c[0].str("reason") != "shutdown" || c[0].str("slot") != slotAt(60) {
			e.sink.dump(t)
			t.Errorf("run.canceled: %v", c)
		}
		if l, err := e.locker.Acquire(context.Background(), history.RunKey("stubborn"), time.Second); err != nil {
			t.Errorf("job lease after shutdown: %v", err)
		} else {
			l.End(context.Background(), locking.Ending{})
		}
		_, err := e.locker.Acquire(context.Background(), history.SlotKey("stubborn", bubbleStart.Add(time.Minute)), time.Second)
		var held *locking.HeldError
		if !errors.As(err, &held) || !held.Done || held.Note != "canceled" {
			t.Errorf("slot after a canceled run: %v", err)
		}
	})
}

// TestShutdownCanceledRunCap: a run that never returns after its cancel
// holds Run up for canceledRunWait at most; Run then returns nil and says
// so in an error line.
func TestShutdownCanceledRunCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		job := &stubborn{ignore: time.Hour, ended: make(chan struct{})}
		sched, _ := ParseSchedule("@every 1m", time.UTC)
		s := e.scheduler("r1", nil, JobSpec{Name: "stuck", Schedule: sched, Job: job})
		stop := running(t, s)
		time.Sleep(time.Minute + time.Second)
		began := time.Now()
		stop()
		if d := time.Since(began); d != 5*time.Second+canceledRunWait {
			t.Errorf("Run returned after %v, want grace 5s + canceledRunWait %v", d, canceledRunWait)
		}
		if canceledRunWait < 2*5*time.Second {
			t.Errorf("canceledRunWait %v is not comfortably above the exec plugin's 5s kill grace", canceledRunWait)
		}
		var stuck []event
		for _, ev := range e.sink.events(t) {
			if ev.str("level") == "ERROR" && ev.str("event") == "" {
				stuck = append(stuck, ev)
			}
		}
		if len(stuck) != 1 {
			t.Errorf("want one error line about the run that did not return: %v", stuck)
		}
		time.Sleep(time.Hour) // let the job's goroutine end inside the bubble
	})
}
