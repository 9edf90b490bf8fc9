package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// ReadSlots joins every nominal slot of the window with its history entry;
// a slot without one is running (an open claim), pending (too recent for
// the reconciler) or unrecorded.
func TestReadSlotsJoinsTheHistory(t *testing.T) {
	ctx := context.Background()
	l := locking.NewLocal(locking.Options{Replica: "r1"})
	defer l.Close()
	sched, err := ParseSchedule("*/10 * * * * *", time.UTC)
	require.NoError(t, err)
	spec := JobSpec{Name: "job", Spec: "*/10 * * * * *", Schedule: sched}.Describe()
	now := time.Now().Truncate(10 * time.Second).Add(3 * time.Second) // 3s after a slot
	at := func(i int) time.Time { return now.Truncate(10 * time.Second).Add(time.Duration(-10*i) * time.Second) }
	// Slots 0 (newest) .. 9 of the last 100 s: 9 succeeded, 7 paused,
	// 5 missed, 1 running, 0 and 2 without entries.
	for _, e := range []struct {
		i int
		e history.Entry
	}{
		{9, history.Entry{Outcome: history.OutcomeSucceeded, Replica: "r1", RunID: "a", Token: 4, Attempts: 1, DurationMS: 12}},
		{7, pausedEntry(at(7))},
		{5, missedEntry(at(5), history.ReasonNoReplica)},
		{3, history.Entry{Outcome: history.OutcomeFailed, Replica: "r2", ErrorClass: "exit_status", Attempts: 2}},
	} {
		if e.e.Slot == "" {
			e.e.Slot = slotString(at(e.i))
		}
		require.NoError(t, l.AppendLog(ctx, "job", locking.LogAppend{Entry: e.e.LogEntry(at(e.i)), Keep: 100}))
	}
	// An entry after the window must not hide the window's.
	require.NoError(t, l.AppendLog(ctx, "job", locking.LogAppend{Entry: history.Entry{Slot: slotString(now.Add(time.Hour)),
		Outcome: history.OutcomeSucceeded}.LogEntry(now.Add(time.Hour)), Keep: 100}))
	lease, err := l.Claim(ctx, history.SlotKey("job", at(1)), time.Minute)
	require.NoError(t, err)
	defer lease.End(ctx, locking.Ending{})

	got, err := history.ReadSlots(ctx, l, spec, history.SlotWindow{Since: at(9), Until: now, Now: now, SettleAfter: 25 * time.Second})
	require.NoError(t, err)
	require.False(t, got.Truncated)
	require.Len(t, got.Slots, 10)
	states := map[int]history.Outcome{}
	for i, v := range got.Slots {
		require.Equal(t, slotString(at(9-i)), v.Slot, "oldest first")
		states[9-i] = v.State
	}
	require.Equal(t, map[int]history.Outcome{9: history.OutcomeSucceeded, 8: history.SlotUnrecorded, 7: history.OutcomeSkipped, 6: history.SlotUnrecorded,
		5: history.OutcomeMissed, 4: history.SlotUnrecorded, 3: history.OutcomeFailed, 2: history.SlotPending, 1: history.SlotRunning, 0: history.SlotPending}, states)
	require.Equal(t, "a", got.Slots[0].Entry.RunID)
	require.Equal(t, history.ReasonPaused, got.Slots[2].Entry.Reason)
	require.Equal(t, "exit_status", got.Slots[6].Entry.ErrorClass)

	// A bounded window lists its newest slots.
	got, err = history.ReadSlots(ctx, l, spec, history.SlotWindow{Since: at(9), Until: now, Now: now, Max: 3})
	require.NoError(t, err)
	require.True(t, got.Truncated)
	require.Equal(t, []string{slotString(at(2)), slotString(at(1)), slotString(at(0))},
		[]string{got.Slots[0].Slot, got.Slots[1].Slot, got.Slots[2].Slot})

	_, err = history.ReadSlots(ctx, l, spec, history.SlotWindow{Since: now, Until: at(3), Now: now})
	require.Error(t, err)
}
