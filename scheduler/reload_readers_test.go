package scheduler

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"
)

// Hot reload as the rest of the scheduler sees it: Trigger, Next,
// SettleAfter, the heartbeat and the reconciler follow the definitions in
// force; Reload waits for Run and refuses after it; readers racing with
// reloads (run under -race).

// TestReloadReachesEveryReader: after a reload that removes a and adds b,
// a is unknown to Trigger, Next and SettleAfter and b is known; the
// heartbeat names the new hash, when it came in force and the new job
// count. Reload waits for Run's loop, and fails once Run has returned.
func TestReloadReachesEveryReader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		a, b := &recorder{now: time.Now}, &recorder{now: time.Now}
		s, err := New(Config{Replica: "r1", Locker: e.locker, Logger: e.sink.logger("r1"), Beat: time.Second,
			DefinitionsHash: "v1", Jobs: []JobSpec{cronSpec(t, "a", "@hourly", a)}})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		// Before Run, Reload waits for the loop.
		early, cancel := context.WithTimeout(ctx, time.Second)
		if _, err := s.Reload(early, "v0", []JobSpec{cronSpec(t, "a", "@hourly", a)}); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Reload before Run = %v, want it to wait until its context ended", err)
		}
		cancel()
		started := time.Now()
		stop := running(t, s)
		time.Sleep(2500 * time.Millisecond)
		fleet, err := history.ReadFleet(ctx, e.locker)
		if err != nil || len(fleet.Replicas) != 1 || fleet.Replicas[0].DefinitionsHash != "v1" ||
			!fleet.Replicas[0].DefinitionsSince.IsZero() || fleet.Replicas[0].Jobs != 1 {
			t.Fatalf("heartbeat before the reload: %+v, %v", fleet.Replicas, err)
		}
		reloadAt := time.Now()
		if _, err := s.Reload(ctx, "v2", []JobSpec{cronSpec(t, "b", "@hourly", b), cronSpec(t, "c", "@daily", b)}); err != nil {
			t.Fatal(err)
		}
		if err := s.Trigger(ctx, "a"); !errors.Is(err, ErrUnknownJob) {
			t.Errorf("Trigger of the removed job = %v, want ErrUnknownJob", err)
		}
		if err := s.Trigger(ctx, "b"); err != nil {
			t.Errorf("Trigger of the added job: %v", err)
		}
		if len(b.all()) != 1 || !b.all()[0].Run.Manual {
			t.Errorf("the added job's manual run: %+v", b.all())
		}
		if _, err := s.Next("a", reloadAt, 1); !errors.Is(err, ErrUnknownJob) {
			t.Errorf("Next of the removed job = %v", err)
		}
		if next, err := s.Next("b", reloadAt, 1); err != nil || next[0].Minute() != 0 {
			t.Errorf("Next of the added job = %v, %v", next, err)
		}
		if s.SettleAfter("a") != 0 || s.SettleAfter("b") == 0 {
			t.Errorf("SettleAfter: removed %v, added %v", s.SettleAfter("a"), s.SettleAfter("b"))
		}
		time.Sleep(1500 * time.Millisecond) // a beat
		fleet, err = history.ReadFleet(ctx, e.locker)
		if err != nil || len(fleet.Replicas) != 1 {
			t.Fatalf("heartbeat after the reload: %+v, %v", fleet.Replicas, err)
		}
		if r := fleet.Replicas[0]; r.DefinitionsHash != "v2" || !r.DefinitionsSince.Equal(reloadAt) || r.Jobs != 2 ||
			!r.Started.Equal(started) {
			t.Errorf("heartbeat after the reload: %+v, want hash v2 since %v, 2 jobs, started %v", r, reloadAt, started)
		}
		stop()
		if _, err := s.Reload(ctx, "v3", nil); !errors.Is(err, ErrStopped) {
			t.Errorf("Reload after Run returned = %v, want ErrStopped", err)
		}
		if len(a.all()) != 0 {
			t.Errorf("the hourly job ran: %+v", a.all())
		}
	})
}

// TestReloadReconcilerJudgesFromTheReload: with the reconciler judging
// slots a few seconds old, a job added at 20.5 s and one rescheduled then
// (*/2 to */3, whose new slots 3, 9, 15 never existed before the reload)
// are judged from the reload on: no slot is declared missed, and the
// reconciler did judge the jobs' slots after the reload.
func TestReloadReconcilerJudgesFromTheReload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		keep, resched, added := &recorder{now: time.Now}, &recorder{now: time.Now}, &recorder{now: time.Now}
		s, err := New(Config{Replica: "r1", Locker: e.locker, Logger: e.sink.logger("r1"), Metrics: e.metrics,
			Beat: time.Second, ReconcileEvery: time.Second, ReconcileAfter: time.Second, DefinitionsHash: "v1",
			Jobs: []JobSpec{everySecond(t, "keep", keep), cronSpec(t, "resched", "*/2 * * * * *", resched)}})
		if err != nil {
			t.Fatal(err)
		}
		stop := running(t, s)
		time.Sleep(20*time.Second + 500*time.Millisecond)
		if _, err := s.Reload(context.Background(), "v2", []JobSpec{everySecond(t, "keep", keep),
			cronSpec(t, "resched", "*/3 * * * * *", resched), everySecond(t, "added", added)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(40 * time.Second)
		stop()
		if missed := where(e.sink.events(t), "slot.missed"); len(missed) != 0 {
			t.Errorf("%d slots declared missed, the first %v", len(missed), missed[0])
		}
		ctx := context.Background()
		for _, name := range []string{"keep", "resched", "added"} {
			w, err := e.locker.ReadRecord(ctx, history.ReconciledKey(name))
			if err != nil || w < bubbleStart.Add(45*time.Second).Unix() {
				t.Errorf("%s: judged up to %v (%v), want past 45 s", name, time.Unix(w, 0).Sub(bubbleStart), err)
			}
		}
		wantSlots(t, "added", added, seq(21, 60, 1)...)
		wantSlots(t, "resched", resched, append(seq(2, 20, 2), seq(21, 60, 3)...)...)
	})
}

// TestReloadWhileReading: reloads every 700 ms between two job sets while
// other goroutines trigger, list and judge jobs; the job in both sets runs
// every slot once, and nothing races (go test -race).
func TestReloadWhileReading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		keep, other := &recorder{d: 300 * time.Millisecond, now: time.Now}, &recorder{now: time.Now}
		sets := [][]JobSpec{
			{everySecond(t, "keep", keep), cronSpec(t, "x", "*/2 * * * * *", other)},
			{cronSpec(t, "y", "* * * * * *", other), everySecond(t, "keep", keep)},
		}
		s := e.scheduler("r1", nil, sets[0]...)
		stop := running(t, s)
		done := make(chan struct{})
		var wg sync.WaitGroup
		for _, name := range []string{"keep", "x", "y"} {
			wg.Go(func() {
				for {
					select {
					case <-done:
						return
					case <-time.After(130 * time.Millisecond):
					}
					_, _ = s.Next(name, time.Now(), 2)
					_ = s.SettleAfter(name)
					_ = s.DefinitionsHash()
					if name != "keep" {
						_ = s.Trigger(context.Background(), name)
					}
				}
			})
		}
		for i := range 14 {
			time.Sleep(700 * time.Millisecond)
			if _, err := s.Reload(context.Background(), "", sets[(i+1)%2]); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Second)
		close(done)
		wg.Wait()
		stop()
		wantSlots(t, "keep", keep, seq(1, 10, 1)...)
		if n := len(where(e.sink.events(t), "slot.skipped", "job", "keep")); n != 0 {
			t.Errorf("keep skipped %d slots", n)
		}
	})
}
