package scheduler

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestOverlapForbidSkewHandover: a replica whose clock is 0.8s behind runs
// a 0.3s job alone, each run ending at real T+1.1s; a replica on time
// joins and fires slot T+1 at real T+1.0s while the slow replica's run of T
// still holds the job lease for 0.1s. That slot must not be dropped as
// overlap: the job lease is asked again until the slot's freshness runs
// out (AUDIT-3). Runs still never overlap and tokens increase.
func TestOverlapForbidSkewHandover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{d: 300 * time.Millisecond, now: time.Now}
		slow := e.scheduler("slow", newJumpClock(-800*time.Millisecond), everySecond(t, "tick", rec))
		stopSlow := running(t, slow)
		time.Sleep(3500 * time.Millisecond)
		fast := e.scheduler("fast", nil, everySecond(t, "tick", rec))
		stopFast := running(t, fast)
		time.Sleep(6 * time.Second)
		stopFast()
		stopSlow()

		runs := rec.all()
		per := map[int64]int{}
		for i, r := range runs {
			per[r.Run.Slot.Unix()-bubbleStart.Unix()]++
			if i > 0 {
				if r.Start.Before(runs[i-1].End) {
					t.Errorf("run of slot %v started %v before the previous run ended %v", r.Run.Slot, r.Start, runs[i-1].End)
				}
				if r.Run.FencingToken <= runs[i-1].Run.FencingToken {
					t.Errorf("tokens not increasing: %d then %d", runs[i-1].Run.FencingToken, r.Run.FencingToken)
				}
			}
		}
		for sec := int64(1); sec <= 9; sec++ {
			if per[sec] != 1 {
				e.sink.dump(t)
				t.Fatalf("slot %d ran %d times, want once (runs by slot: %v)", sec, per[sec], per)
			}
		}
		if o := where(e.sink.events(t), "slot.skipped", "reason", "overlap"); len(o) != 0 {
			t.Errorf("overlap skips although no run was going on at the slot's freshness end: %v", o)
		}
	})
}
