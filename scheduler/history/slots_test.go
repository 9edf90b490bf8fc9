package history_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/scheduler"
	"github.com/slotlock/slotlock/scheduler/history"
)

// countingSchedule counts the slots computed.
type countingSchedule struct {
	scheduler.Schedule
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
		sched, err := scheduler.ParseSchedule(tc.spec, time.UTC)
		require.NoError(t, err)
		since := until.Add(-tc.window)
		all := history.SlotsIn(sched, since, until, 1<<30, nil)
		want, wantTrunc := all, false
		if len(all) > tc.n {
			want, wantTrunc = all[len(all)-tc.n:], true
		}
		cs := &countingSchedule{Schedule: sched}
		got, trunc := history.NewestSlots(cs, since, until, tc.n)
		require.Equal(t, wantTrunc, trunc, tc.spec)
		require.Equal(t, len(want), len(got), tc.spec)
		require.Equal(t, want, got, tc.spec)
		require.LessOrEqual(t, cs.n, 40*tc.n, "%s: slots computed", tc.spec)
	}
}
