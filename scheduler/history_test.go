package scheduler

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// Every slot that ends with a done marker leaves its outcome in the job's
// history, newest first, without the error's text; the history keeps its
// newest HistoryKeep entries.
func TestHistoryRecordsOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{now: time.Now}
		rec.fail.Store(1) // slot 1 fails
		s, err := New(Config{Replica: "r1", Locker: e.locker, Logger: e.sink.logger("r1"), Metrics: e.metrics,
			LockTTL: 30 * time.Second, HistoryKeep: 3, Jobs: []JobSpec{everySecond(t, "job", rec)}})
		require.NoError(t, err)
		stop := running(t, s)
		time.Sleep(4500 * time.Millisecond)
		stop()

		h, err := history.ReadEntries(context.Background(), e.locker, "job", time.Time{}, 10)
		require.NoError(t, err)
		require.Len(t, h, 3, "the history keeps its newest 3")
		require.Equal(t, []string{slotAt(4), slotAt(3), slotAt(2)}, []string{h[0].Slot, h[1].Slot, h[2].Slot})
		for _, x := range h {
			require.Equal(t, history.OutcomeSucceeded, x.Outcome)
			require.Equal(t, "r1", x.Replica)
			require.NotEmpty(t, x.RunID)
			require.Positive(t, x.Token)
			require.Equal(t, 1, x.Attempts)
		}
		runs := where(e.sink.events(t), "run.started", "slot", slotAt(4))
		require.Equal(t, runs[0].str("run_id"), h[0].RunID)

		h, err = history.ReadEntries(context.Background(), e.locker, "job", bubbleStart.Add(4*time.Second), 10)
		require.NoError(t, err)
		require.Len(t, h, 1)
	})
}

// A failed run's entry names the kind of error, never its text.
func TestHistoryFailedRunHasAClassNotAText(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{now: time.Now}
		rec.fail.Store(100)
		stop := running(t, e.scheduler("r1", nil, everySecond(t, "job", rec)))
		time.Sleep(1500 * time.Millisecond)
		stop()
		h, err := history.ReadEntries(context.Background(), e.locker, "job", time.Time{}, 10)
		require.NoError(t, err)
		require.Len(t, h, 1)
		require.Equal(t, history.OutcomeFailed, h[0].Outcome)
		require.Equal(t, "error", h[0].ErrorClass)
	})
}

type classedErr struct{}

func (classedErr) Error() string      { return "fence: stale fencing token" }
func (classedErr) ErrorClass() string { return "stale_token" }

// A run canceled because its lease was lost, whose job had its write
// refused as stale (an exec recipe's exit 75, fence.ErrStale), is recorded
// as canceled with reason lock_lost and error class stale_token, on its
// entry and its run.canceled line; a cancel that leaves only the context's
// error records no class.
func TestCanceledRunKeepsItsStaleTokenClass(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   func(cause error) error
		class string
	}{
		{"refused", func(cause error) error { return fmt.Errorf("write report: %w", classedErr{}) }, "stale_token"},
		{"plain", func(cause error) error { return fmt.Errorf("stopped: %w", cause) }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t)
				clock := newJumpClock(0)
				e.locker = locking.NewLocal(locking.Options{Replica: "local", Clock: clock})
				job := funcJob(func(ctx context.Context, _ jobs.Run) error {
					<-ctx.Done()
					return tc.err(context.Cause(ctx))
				})
				sched, _ := ParseSchedule("@every 1h", time.UTC)
				stop := running(t, e.scheduler("r1", clock, JobSpec{Name: "victim", Schedule: sched, Job: job}))
				time.Sleep(time.Hour + 5*time.Second)
				clock.jump(time.Minute) // paused past both leases
				time.Sleep(15 * time.Second)
				stop()
				h, err := history.ReadEntries(context.Background(), e.locker, "victim", time.Time{}, 10)
				require.NoError(t, err)
				require.Len(t, h, 1)
				require.Equal(t, history.OutcomeCanceled, h[0].Outcome)
				require.Equal(t, history.ReasonLockLost, h[0].Reason)
				require.Equal(t, tc.class, h[0].ErrorClass)
				c := where(e.sink.events(t), "run.canceled")
				require.Len(t, c, 1)
				require.Equal(t, "lock_lost", c[0].str("reason"))
				require.Equal(t, tc.class, c[0].str("error_class"))
			})
		})
	}
}

// errorClass reads the class a job's error gives itself through any
// wrapping (fence.ErrStale's "stale_token", without the scheduler
// importing fence); a plain error is "error", a panic "panic".
func TestErrorClassOfWrappedError(t *testing.T) {
	if got := errorClass(fmt.Errorf("write report: %w", classedErr{})); got != "stale_token" {
		t.Fatalf("errorClass = %q, want stale_token", got)
	}
	if got := errorClass(errors.New("boom")); got != "error" {
		t.Fatalf("errorClass(plain) = %q, want error", got)
	}
}
