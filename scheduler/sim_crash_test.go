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
	// The run of slot :10 starts at about 9.7 s and confirms its start
	// with its first renewal, a second later. Crashed after that, it is
	// reported abandoned; crashed before, nobody can tell whether its body
	// began: it is reported missed, may have started — never abandoned,
	// never run again.
	for _, c := range []struct {
		name    string
		crashAt time.Duration
		started bool
	}{{"confirmed", 11500 * time.Millisecond, true}, {"unconfirmed", 10*time.Second + 100*time.Millisecond, false}} {
		for _, policy := range []scheduler.MisfirePolicy{scheduler.MisfireRunOnce, scheduler.MisfireRunAll, scheduler.MisfireSkip} {
			t.Run(c.name+"/"+string(policy), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { testSimCrashedRun(t, policy, c.crashAt, c.started) })
			})
		}
	}
}

func testSimCrashedRun(t *testing.T, policy scheduler.MisfirePolicy, crashAt time.Duration, started bool) {
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
	time.Sleep(crashAt)
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
	time.Sleep(time.Minute - crashAt)
	w.stop()

	viol, st := w.check(w.start.Add(5*time.Second), w.start.Add(55*time.Second))
	require.Empty(t, viol)
	if started {
		require.Equal(t, 1, st.abandoned, "the dead run must be reported once")
		require.Zero(t, st.mayHaveStarted)
	} else {
		require.Zero(t, st.abandoned, "a run that never confirmed its start is not reported abandoned")
		require.Equal(t, 1, st.mayHaveStarted, "the dead run must be reported once, as missed, may have started")
	}
	runs := 0
	w.rec.mu.Lock()
	for _, r := range w.rec.runs {
		if r.slot == "2000-01-01T00:00:10Z" {
			runs++
		}
	}
	w.rec.mu.Unlock()
	require.Equal(t, 1, runs, "slot :10 started again")
}
