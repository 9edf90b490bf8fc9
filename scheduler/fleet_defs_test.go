package scheduler

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"
)

// jitterFleet is two replicas of one every-minute job over one store:
// "old" runs it with jitter 50 s, "new" — restarted with the lower
// jitter lower, or reloaded to it — and slot is a slot whose offset under
// the old jitter is above minOff.
type jitterFleet struct {
	e    *env
	rec  *recorder
	name string
	slot time.Time
}

const oldJitter = 50 * time.Second

func newJitterFleet(t *testing.T, minOff time.Duration) *jitterFleet {
	f := &jitterFleet{e: newEnv(t), rec: &recorder{now: time.Now}}
	slot := bubbleStart.Add(3 * time.Minute)
	for i := 0; f.name == ""; i++ {
		if n := fmt.Sprintf("j%d", i); jitterOffset(n, slot, oldJitter) > minOff {
			f.name, f.slot = n, slot
		}
	}
	return f
}

// replica is a replica running the job with jitter j and the given
// history.keep, publishing its definitions every 10 s.
func (f *jitterFleet) replica(t *testing.T, name string, j time.Duration, keep int) *Scheduler {
	sp := f.spec(t, j)
	s, err := New(Config{Replica: name, Locker: f.e.locker, Logger: f.e.sink.logger(name), Metrics: f.e.metrics,
		LockTTL: 30 * time.Second, MaxClockSkew: 2 * time.Second, ShutdownGrace: 5 * time.Second,
		Beat: 10 * time.Second, HistoryKeep: keep, Jobs: []JobSpec{sp}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (f *jitterFleet) spec(t *testing.T, j time.Duration) JobSpec {
	sp := cronSpec(t, f.name, "0 * * * * *", f.rec)
	sp.Jitter, sp.Overlap = j, OverlapAllow
	return sp
}

// runsOf counts the runs of the fleet's slot.
func (f *jitterFleet) runsOf() int {
	n := 0
	for _, r := range f.rec.all() {
		if r.Run.Slot.Equal(f.slot) {
			n++
		}
	}
	return n
}

// TestRestartLoweringTheJitterDropsNoSlot: a replica restarted with a
// lower jitter, after slot T's due time and lateness bound under it but
// before T's due time under the jitter the other replica still runs,
// does not take T for missed: the other replica runs it, once. (Its
// start-up check found T late and closed it skipped late: the other
// replica then found T done, and T never ran.)
func TestRestartLoweringTheJitterDropsNoSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newJitterFleet(t, 20*time.Second)
		stopOld := running(t, f.replica(t, "old", oldJitter, 0))
		time.Sleep(time.Until(f.slot.Add(10 * time.Second))) // late under no jitter, not yet due under the old one
		stopNew := running(t, f.replica(t, "new", 0, 0))
		time.Sleep(time.Until(f.slot.Add(oldJitter + 5*time.Second)))
		stopNew()
		stopOld()
		if n := f.runsOf(); n != 1 {
			f.e.sink.dump(t)
			t.Errorf("slot %s ran %d times, want once", slotString(f.slot), n)
		}
		if late := where(f.e.sink.events(t), evSlotSkipped, "reason", "late"); len(late) != 0 {
			t.Errorf("slots skipped late across the restart: %v", late)
		}
	})
}

// TestLowerJitterKeepsTheMarkerForTheOldJitter: without a slot history
// (history.keep 0) the done marker is all that tells a slot ran. A
// replica that runs the job with a lower jitter — restarted with it, or
// reloaded to it — runs slot T early; the replica still on the old jitter
// fires T more than the marker's usual lifetime later, and must find it
// done. (The marker expired and T ran twice.)
func TestLowerJitterKeepsTheMarkerForTheOldJitter(t *testing.T) {
	for _, how := range []string{"restart", "reload"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newJitterFleet(t, 40*time.Second)
				stopOld := running(t, f.replica(t, "old", oldJitter, -1))
				time.Sleep(time.Second)
				var s *Scheduler
				if how == "restart" {
					s = f.replica(t, "new", 0, -1)
				} else {
					s = f.replica(t, "new", oldJitter, -1)
				}
				stopNew := running(t, s)
				if how == "reload" {
					time.Sleep(time.Until(f.slot.Add(-30 * time.Second)))
					if _, err := s.Reload(context.Background(), "v2", []JobSpec{f.spec(t, 0)}); err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(time.Until(f.slot.Add(oldJitter + 5*time.Second)))
				stopNew()
				stopOld()
				runs := f.rec.all()
				if n := f.runsOf(); n != 1 {
					f.e.sink.dump(t)
					t.Errorf("slot %s ran %d times, want once: %+v", slotString(f.slot), n, runs)
				}
			})
		})
	}
}

// TestLeavingAllowWaitsForTheRunsGoingOn: a rolling restart from overlap
// allow to forbid. The old replica, stopping, still runs slot 5 (8 s,
// under allow: no job lease) when the new one starts with forbid; the new
// replica's first slots while that run goes on are skipped for overlap,
// not run beside it, and the next slot after it ended runs. (The new
// replica took the free job lease and ran slot 10 beside it.)
func TestLeavingAllowWaitsForTheRunsGoingOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{d: 8 * time.Second, now: time.Now}
		mk := func(name string, o Overlap) *Scheduler {
			sp := cronSpec(t, "j", "*/5 * * * * *", rec)
			sp.Overlap = o
			s, err := New(Config{Replica: name, Locker: e.locker, Logger: e.sink.logger(name), Metrics: e.metrics,
				LockTTL: 30 * time.Second, MaxClockSkew: 2 * time.Second, ShutdownGrace: 10 * time.Second,
				Beat: 10 * time.Second, Jobs: []JobSpec{sp}})
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		stopOld := running(t, mk("old", OverlapAllow))
		time.Sleep(6 * time.Second) // the old replica's run of slot 5 goes on to 13 s
		stopped := make(chan struct{})
		go func() { stopOld(); close(stopped) }() // a rolling restart: it finishes its run
		stopNew := running(t, mk("new", OverlapForbid))
		time.Sleep(20 * time.Second)
		stopNew()
		<-stopped
		runs := rec.all()
		for i := 1; i < len(runs); i++ {
			if runs[i].Start.Before(runs[i-1].End) {
				e.sink.dump(t)
				t.Errorf("run of %s on %s started at %v, before the run of %s ended (%v)", slotString(runs[i].Run.Slot),
					runs[i].Run.Replica, runs[i].Start.Sub(bubbleStart), slotString(runs[i-1].Run.Slot), runs[i-1].End.Sub(bubbleStart))
			}
		}
		if len(runs) < 2 {
			t.Errorf("%d runs: the new replica ran nothing", len(runs))
		}
	})
}
