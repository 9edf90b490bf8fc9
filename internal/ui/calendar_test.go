package ui

import (
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

// A job with a calendar shows its name and the date of the next slot it
// excludes, on the page and in /api/v1/jobs (calendar, next_excluded);
// the excluded slots are not on its timeline; a job without a calendar
// carries neither.
func TestPageShowsTheCalendar(t *testing.T) {
	l := locking.NewLocal(locking.Options{Replica: "r1"})
	defer l.Close()
	now := time.Date(2026, 12, 23, 12, 0, 0, 0, time.UTC)
	cal := scheduler.NewCalendar("holidays-de", false, []time.Time{time.Date(2026, 12, 24, 0, 0, 0, 0, time.UTC)})
	held := everySecond(t, "held")
	held.Calendar = cal
	specs := []scheduler.JobSpec{held, everySecond(t, "plain")}
	h := Handler(Backend{Locker: l, Specs: specs, Hash: "h1", Now: func() time.Time { return now },
		SettleAfter: func(string) time.Duration { return time.Minute }})
	get := func(path string) string {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		require.Equal(t, 200, rec.Code, path)
		return rec.Body.String()
	}
	page := get("/")
	require.Contains(t, page, `calendar <code>holidays-de</code> · next excluded 2026-12-24`)
	require.Equal(t, 1, strings.Count(page, `class="calendar"`), "only the job with a calendar")

	var doc struct{ Jobs []history.JobStatus }
	require.NoError(t, json.Unmarshal([]byte(get("/api/v1/jobs")), &doc))
	require.Len(t, doc.Jobs, 2)
	require.Equal(t, "holidays-de", doc.Jobs[0].Calendar)
	require.Equal(t, "2026-12-24", doc.Jobs[0].NextExcluded)
	require.Empty(t, doc.Jobs[1].Calendar)
	require.Empty(t, doc.Jobs[1].NextExcluded)
	require.NotContains(t, get("/api/v1/jobs?job=plain"), `"calendar"`)

	// A day later, on the excluded date: no slot in the last minute.
	now = time.Date(2026, 12, 24, 12, 0, 0, 0, time.UTC)
	var sl history.Slots
	require.NoError(t, json.Unmarshal([]byte(get("/api/v1/jobs/held/slots?since=1m")), &sl))
	require.Empty(t, sl.Slots)
	require.NoError(t, json.Unmarshal([]byte(get("/api/v1/jobs/plain/slots?since=1m")), &sl))
	require.Len(t, sl.Slots, 61, "both ends of the minute")
}
