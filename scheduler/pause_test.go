package scheduler

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
)

// A pause with an end skips the job's slots (reason paused, with who and
// why), ends by itself, and the paused slots are handled: a replica that
// starts afterwards does not recover one as missed under run_once.
func TestPauseSkipsSlotsAndEndsByItself(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{now: time.Now}
		spec := everySecond(t, "job", rec)
		spec.Misfire = Misfire{Policy: MisfireRunOnce, Deadline: time.Minute}
		stop := running(t, e.scheduler("r1", nil, spec))
		time.Sleep(2500 * time.Millisecond)
		_, err := e.locker.SetPause(context.Background(), "job",
			locking.Pause{Paused: true, Until: time.Now().Add(3 * time.Second), By: "ops", Reason: "deploy"})
		require.NoError(t, err)
		time.Sleep(6 * time.Second) // to 8.5s: slots 3, 4, 5 paused; 6, 7, 8 run
		stop()

		var ran []int64
		for _, r := range rec.all() {
			ran = append(ran, r.Run.Slot.Unix()-bubbleStart.Unix())
		}
		require.Equal(t, []int64{1, 2, 6, 7, 8}, ran)
		evs := e.sink.events(t)
		skips := where(evs, "slot.skipped", "reason", "paused")
		require.Len(t, skips, 3)
		require.Equal(t, slotAt(3), skips[0].str("slot"))
		require.Equal(t, "ops", skips[0].str("by"))
		require.Equal(t, "deploy", skips[0].str("pause_reason"))
		require.Equal(t, "INFO", skips[0].str("level"))
		paused := where(evs, "job.paused")
		require.Len(t, paused, 1)
		require.Equal(t, "deploy", paused[0].str("reason"))
		require.Equal(t, bubbleStart.Add(5500*time.Millisecond).UTC().Format(time.RFC3339), paused[0].str("until"))
		require.Len(t, where(evs, "job.resumed"), 1)
		require.Equal(t, 0, e.metrics.get("job/paused", true))

		// A replica starting now finds nothing missed.
		stop = running(t, e.scheduler("r2", nil, spec))
		time.Sleep(10 * time.Second)
		stop()
		require.Empty(t, where(e.sink.events(t), "misfire.recovered"))
	})
}

// A pause without an end holds until resumed; a manual trigger still runs.
func TestPauseUntilResumedAndTrigger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{now: time.Now}
		s := e.scheduler("r1", nil, everySecond(t, "job", rec))
		stop := running(t, s)
		time.Sleep(1500 * time.Millisecond)
		_, err := e.locker.SetPause(context.Background(), "job", locking.Pause{Paused: true, By: "ops"})
		require.NoError(t, err)
		time.Sleep(3 * time.Second)
		require.NoError(t, s.Trigger(context.Background(), "job"), "a manual run is not paused")
		_, err = e.locker.SetPause(context.Background(), "job", locking.Pause{By: "ops"})
		require.NoError(t, err)
		time.Sleep(2 * time.Second) // to 6.5s
		stop()
		var ran []string
		for _, r := range rec.all() {
			ran = append(ran, r.Run.SlotString())
		}
		require.Equal(t, []string{slotAt(1), "manual", slotAt(5), slotAt(6)}, ran)
		require.Len(t, where(e.sink.events(t), "slot.skipped", "reason", "paused"), 3) // slots 2, 3, 4
	})
}
