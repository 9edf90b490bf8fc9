package scheduler

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"
)

// TestRollingChangeFromAllowAllowSideWaits: a rolling change of a job's
// overlap between allow and forbid, with a replica on each side running
// at once, in both orders of start (the new policy's replica starts
// while the old one runs). The body (8 s) is longer than the period
// (5 s): a run of the forbid replica never goes on beside any other run,
// whichever side started it — the forbid side waits for the allow side's
// runs (their claims), and the allow side for the forbid side's (the job
// lease). The allow replica's own runs may overlap each other.
func TestRollingChangeFromAllowAllowSideWaits(t *testing.T) {
	for _, first := range []Overlap{OverlapAllow, OverlapForbid} {
		t.Run("first "+string(first), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t)
				rec := &recorder{d: 8 * time.Second, now: time.Now}
				mk := func(o Overlap) *Scheduler {
					sp := cronSpec(t, "j", "*/5 * * * * *", rec)
					sp.Overlap = o
					s, err := New(Config{Replica: string(o), Locker: e.locker, Logger: e.sink.logger(string(o)), Metrics: e.metrics,
						LockTTL: 30 * time.Second, MaxClockSkew: 2 * time.Second, ShutdownGrace: 10 * time.Second,
						Beat: 10 * time.Second, Jobs: []JobSpec{sp}})
					if err != nil {
						t.Fatal(err)
					}
					return s
				}
				second := map[Overlap]Overlap{OverlapAllow: OverlapForbid, OverlapForbid: OverlapAllow}[first]
				stopFirst := running(t, mk(first))
				time.Sleep(6 * time.Second) // the first replica's run of slot 5 goes on to 13 s
				stopSecond := running(t, mk(second))
				time.Sleep(40 * time.Second)
				stopSecond()
				stopFirst()
				checkRollingRuns(t, e.sink, rec.all())
			})
		})
	}
}

// checkRollingRuns fails t when a run of the forbid replica overlaps
// another run, or when a side won no slot (neither ran one nor skipped
// one for overlap): the two sides never met.
func checkRollingRuns(t *testing.T, sink *logSink, runs []record) {
	t.Helper()
	won := map[string]int{}
	base := time.Now() // times are told from the first run's start
	for _, r := range runs {
		if r.Start.Before(base) {
			base = r.Start
		}
	}
	for i, a := range runs {
		won[a.Run.Replica]++
		for _, b := range runs[i+1:] {
			if a.Run.Replica == string(OverlapAllow) && b.Run.Replica == string(OverlapAllow) {
				continue
			}
			if a.Start.Before(b.End) && b.Start.Before(a.End) {
				sink.dump(t)
				t.Errorf("run of %s on %s (%v–%v) and run of %s on %s (%v–%v, from the first run's start) went on at once",
					slotString(a.Run.Slot), a.Run.Replica, a.Start.Sub(base), a.End.Sub(base),
					slotString(b.Run.Slot), b.Run.Replica, b.Start.Sub(base), b.End.Sub(base))
			}
		}
	}
	for _, ev := range where(sink.events(t), evSlotSkipped, "reason", string(history.ReasonOverlap)) {
		won[ev.str("replica")]++
	}
	t.Logf("slots run or skipped for overlap, per replica: %v", won)
	if won[string(OverlapAllow)] == 0 || won[string(OverlapForbid)] == 0 {
		t.Errorf("slots won per replica %v: want both sides to win some", won)
	}
}
