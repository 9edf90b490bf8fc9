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
	"github.com/slotlock/slotlock/scheduler/notify"
)

// A job with notify rules names them in its row, and its timeline lists
// its latest notifications' results from the notification log; a job
// without rules shows neither.
func TestPageShowsNotifications(t *testing.T) {
	l := locking.NewLocal(locking.Options{Replica: "r1"})
	defer l.Close()
	now := time.Date(2026, 12, 23, 12, 0, 0, 0, time.UTC)
	told := everySecond(t, "told")
	told.Notify = []scheduler.NotifyRule{{To: "oncall", On: []string{"failed", "recovered"}}}
	specs := []scheduler.JobSpec{told, everySecond(t, "plain")}
	r := notify.Record{Kind: "notify", State: notify.StateFailed, Key: "run-9:failed", Job: "told", Slot: "2026-12-23T11:59:58Z",
		RunID: "run-9", To: "oncall", Event: "failed", Outcome: "failed", Writer: "r2", At: now.Add(-time.Second), Attempts: 5}
	b, err := json.Marshal(r)
	require.NoError(t, err)
	require.NoError(t, l.AppendLog(context.Background(), notify.Family,
		locking.LogAppend{Entry: locking.LogEntry{Score: r.At.Unix(), Value: string(b)}}))
	h := Handler(Backend{Locker: l, Specs: specs, Hash: "h1", Now: func() time.Time { return now },
		SettleAfter: func(string) time.Duration { return time.Minute }})
	get := func(path string) string {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		require.Equal(t, 200, rec.Code, path)
		return rec.Body.String()
	}
	page := get("/")
	require.Contains(t, page, `<div class="notify">notify oncall on failed, recovered</div>`)
	require.Equal(t, 1, strings.Count(page, `class="notify"`))
	job := get("/?job=told")
	require.Contains(t, job, `<li>2026-12-23T11:59:59Z failed (slot 2026-12-23T11:59:58Z) → oncall: failed after 5 tries</li>`)
	require.NotContains(t, get("/?job=plain"), `id="notifications"`)
}
