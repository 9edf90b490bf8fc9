package scheduler_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/scheduler"
)

// Issue #10, hole 1, as its report gives it: three replicas, three stores,
// lock.ttl 3s, max_clock_skew 1s, a job every 10 s whose run takes 3 s.
// The replica running slot :10 is killed 0.5 s into the run and restarted
// 1 s later. The restarted replica's start-up check used to see the slot
// as missed, wait out the dead run's lock, win the slot and run it a
// second time. Now the slot never starts again, and exactly one replica
// reports the dead run (run.abandoned, with its run id).
func TestSimCrashedRunIsNotRunAgain(t *testing.T) {
	for _, policy := range []scheduler.MisfirePolicy{scheduler.MisfireRunOnce, scheduler.MisfireRunAll, scheduler.MisfireSkip} {
		t.Run(string(policy), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newWorld(t, simConfig{seed: 1, duration: time.Minute, replicas: 3, stores: 3,
					ttl: 3 * time.Second, skew: time.Second, jobs: []simJobDef{{
						name: "crash", spec: "*/10 * * * * *", overlap: scheduler.OverlapForbid,
						misfire: scheduler.Misfire{Policy: policy, Deadline: time.Minute},
						short:   [2]time.Duration{3 * time.Second, 3*time.Second + 1},
						long:    [2]time.Duration{3 * time.Second, 3*time.Second + 1},
					}}})
				for _, rep := range w.reps {
					w.startReplica(rep)
				}
				time.Sleep(10*time.Second + 500*time.Millisecond)
				var holder *replica
				w.rec.mu.Lock()
				for _, r := range w.rec.runs {
					if r.slot == "2000-01-01T00:00:10Z" {
						for _, rep := range w.reps {
							if rep.name == r.replica {
								holder = rep
							}
						}
					}
				}
				w.rec.mu.Unlock()
				require.NotNil(t, holder, "no replica runs slot :10")
				w.crash(holder, time.Second)
				time.Sleep(50 * time.Second)
				w.stop()

				viol, st := w.check(w.start.Add(5*time.Second), w.start.Add(55*time.Second))
				require.Empty(t, viol)
				require.Equal(t, 1, st.abandoned, "the dead run must be reported once")
				runs := 0
				w.rec.mu.Lock()
				for _, r := range w.rec.runs {
					if r.slot == "2000-01-01T00:00:10Z" {
						runs++
					}
				}
				w.rec.mu.Unlock()
				require.Equal(t, 1, runs, "slot :10 started again")
			})
		})
	}
}
