package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
)

// countingSchedule counts the slots computed.
type countingSchedule struct {
	Schedule
	n int
}

func (c *countingSchedule) Next(t time.Time) time.Time { c.n++; return c.Schedule.Next(t) }

// A window holding more slots than the bound lists exactly its newest ones,
// for regular and irregular schedules, and computes a bounded number of
// slots whatever the window's length.
func TestNewestSlotsOfALongWindow(t *testing.T) {
	until := time.Date(2026, 3, 9, 13, 20, 7, 300, time.UTC) // a Monday
	for _, tc := range []struct {
		spec   string
		window time.Duration
		n      int
	}{
		{"* * * * * *", time.Hour, 10_000},          // fits
		{"* * * * * *", 7 * 24 * time.Hour, 10_000}, // 604,800 slots
		{"*/7 * * * * *", 24 * time.Hour, 1_000},
		{"* * 9-17 * * 1-5", 14 * 24 * time.Hour, 1_000},   // office hours: gaps of nights and a weekend
		{"* * 9-10 * * 1-5", 14 * 24 * time.Hour, 20_000},  // more than the first week holds
		{"0 30 2 * * *", 400 * 24 * time.Hour, 10_000},     // fits
		{"*/5 * 3 * * 6", 60 * 24 * time.Hour, 700},        // Saturdays 3:00-3:59
		{"* * * 1 1 *", 3 * 365 * 24 * time.Hour, 100_000}, // New Year's days
	} {
		sched, err := ParseSchedule(tc.spec, time.UTC)
		require.NoError(t, err)
		since := until.Add(-tc.window)
		all := slotsIn(sched, since, until, 1<<30, nil)
		want, wantTrunc := all, false
		if len(all) > tc.n {
			want, wantTrunc = all[len(all)-tc.n:], true
		}
		cs := &countingSchedule{Schedule: sched}
		got, trunc := newestSlots(cs, since, until, tc.n)
		require.Equal(t, wantTrunc, trunc, tc.spec)
		require.Equal(t, len(want), len(got), tc.spec)
		require.Equal(t, want, got, tc.spec)
		require.LessOrEqual(t, cs.n, 40*tc.n, "%s: slots computed", tc.spec)
	}
}

// ReadSlots joins every nominal slot of the window with its history entry;
// a slot without one is running (an open claim), pending (too recent for
// the reconciler) or unrecorded.
func TestReadSlotsJoinsTheHistory(t *testing.T) {
	ctx := context.Background()
	l := locking.NewLocal(locking.Options{Replica: "r1"})
	defer l.Close()
	sched, err := ParseSchedule("*/10 * * * * *", time.UTC)
	require.NoError(t, err)
	spec := JobSpec{Name: "job", Spec: "*/10 * * * * *", Schedule: sched, Enabled: true}
	now := time.Now().Truncate(10 * time.Second).Add(3 * time.Second) // 3s after a slot
	at := func(i int) time.Time { return now.Truncate(10 * time.Second).Add(time.Duration(-10*i) * time.Second) }
	// Slots 0 (newest) .. 9 of the last 100 s: 9 succeeded, 7 paused,
	// 5 missed, 1 running, 0 and 2 without entries.
	for _, e := range []struct {
		i int
		e HistoryEntry
	}{
		{9, HistoryEntry{Outcome: OutcomeSucceeded, Replica: "r1", RunID: "a", Token: 4, Attempts: 1, DurationMS: 12}},
		{7, pausedEntry(at(7))},
		{5, missedEntry(at(5), MissedNoReplica)},
		{3, HistoryEntry{Outcome: OutcomeFailed, Replica: "r2", ErrorClass: "exit_status", Attempts: 2}},
	} {
		if e.e.Slot == "" {
			e.e.Slot = slotString(at(e.i))
		}
		require.NoError(t, l.AppendLog(ctx, "job", locking.LogAppend{Entry: e.e.logEntry(at(e.i)), Keep: 100}))
	}
	// An entry after the window must not hide the window's.
	require.NoError(t, l.AppendLog(ctx, "job", locking.LogAppend{Entry: HistoryEntry{Slot: slotString(now.Add(time.Hour)),
		Outcome: OutcomeSucceeded}.logEntry(now.Add(time.Hour)), Keep: 100}))
	lease, err := l.Claim(ctx, slotKey("job", at(1)), time.Minute)
	require.NoError(t, err)
	defer lease.End(ctx, locking.Ending{})

	got, err := ReadSlots(ctx, l, spec, SlotWindow{Since: at(9), Until: now, Now: now, SettleAfter: 25 * time.Second})
	require.NoError(t, err)
	require.False(t, got.Truncated)
	require.Len(t, got.Slots, 10)
	states := map[int]string{}
	for i, v := range got.Slots {
		require.Equal(t, slotString(at(9-i)), v.Slot, "oldest first")
		states[9-i] = v.State
	}
	require.Equal(t, map[int]string{9: OutcomeSucceeded, 8: SlotUnrecorded, 7: OutcomeSkipped, 6: SlotUnrecorded,
		5: OutcomeMissed, 4: SlotUnrecorded, 3: OutcomeFailed, 2: SlotPending, 1: SlotRunning, 0: SlotPending}, states)
	require.Equal(t, "a", got.Slots[0].Entry.RunID)
	require.Equal(t, ReasonPaused, got.Slots[2].Entry.Reason)
	require.Equal(t, "exit_status", got.Slots[6].Entry.ErrorClass)

	// A bounded window lists its newest slots.
	got, err = ReadSlots(ctx, l, spec, SlotWindow{Since: at(9), Until: now, Now: now, Max: 3})
	require.NoError(t, err)
	require.True(t, got.Truncated)
	require.Equal(t, []string{slotString(at(2)), slotString(at(1)), slotString(at(0))},
		[]string{got.Slots[0].Slot, got.Slots[1].Slot, got.Slots[2].Slot})

	_, err = ReadSlots(ctx, l, spec, SlotWindow{Since: now, Until: at(3), Now: now})
	require.Error(t, err)
}
