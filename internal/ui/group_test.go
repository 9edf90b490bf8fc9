package ui

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler"
	"github.com/slotlock/slotlock/scheduler/history"
)

// A job in a concurrency group shows it with its limit, on the page and
// in /api/v1/jobs (group, group_limit); a slot skipped group_full is on
// its timeline as skipped with that reason; a job without a group carries
// neither.
func TestPageShowsTheGroup(t *testing.T) {
	l := locking.NewLocal(locking.Options{Replica: "r1"})
	defer l.Close()
	now := time.Date(2026, 12, 23, 12, 0, 0, 0, time.UTC)
	heavy := everySecond(t, "heavy")
	heavy.Group = &scheduler.Group{Name: "db-heavy", Limit: 2}
	h := Handler(Backend{Locker: l, Specs: []scheduler.JobSpec{heavy, everySecond(t, "plain")}, Hash: "h1",
		Now: func() time.Time { return now }, SettleAfter: func(string) time.Duration { return time.Minute }})
	get := func(path string) string {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		require.Equal(t, 200, rec.Code, path)
		return rec.Body.String()
	}
	page := get("/")
	require.Contains(t, page, `group <code>db-heavy (limit 2)</code>`)
	require.Equal(t, 1, strings.Count(page, `class="group"`), "only the job with a group")

	var doc struct{ Jobs []history.JobStatus }
	require.NoError(t, json.Unmarshal([]byte(get("/api/v1/jobs")), &doc))
	require.Equal(t, "db-heavy", doc.Jobs[0].Group)
	require.Equal(t, 2, doc.Jobs[0].GroupLimit)
	require.NotContains(t, get("/api/v1/jobs?job=plain"), `"group`)

	slot := now.Add(-30 * time.Second)
	e := history.Entry{Slot: slot.Format(time.RFC3339), Outcome: history.OutcomeSkipped, Reason: history.ReasonGroupFull, Replica: "r1"}
	require.NoError(t, l.AppendLog(context.Background(), "heavy", locking.LogAppend{Entry: e.LogEntry(slot), Keep: 10}))
	var sl history.Slots
	require.NoError(t, json.Unmarshal([]byte(get("/api/v1/jobs/heavy/slots?since=1m")), &sl))
	found := false
	for _, v := range sl.Slots {
		if v.Slot == e.Slot {
			found = v.State == history.OutcomeSkipped && v.Entry != nil && v.Entry.Reason == history.ReasonGroupFull
		}
	}
	require.True(t, found, "the group_full slot on the timeline: %+v", sl.Slots)
}
