package ui

import (
	"bytes"
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

// hostile is markup that would run a script if it reached the page as
// markup.
const hostile = `<script>document.body.dataset.pwned=1</script><img src=x onerror="document.body.dataset.pwned=1">`

// Every string the page shows that does not come from the configuration —
// pause reasons and authors, replica names and versions, history reasons,
// replicas, run ids and error classes — is escaped, in text and in
// attributes alike.
func TestPageEscapesEverythingItShows(t *testing.T) {
	v := pageView{At: "2026-01-01T00:00:00Z", Hash: "abc", Refresh: 15, RefreshOff: "?refresh=0",
		Query: pageQuery{Q: hostile, Job: "job", Since: hostile},
		Jobs: []jobRow{{Name: "job", Href: "?job=job", Schedule: "* * * * * *", Zone: "UTC", Next: "-",
			Paused: pauseText(&history.PauseStatus{By: hostile, Reason: hostile}), LastState: "failed",
			LastClass: "s-failed", LastText: hostile, Running: []string{hostile}}},
		JobsFrom: 1, JobsTo: 1, JobsTotal: 1,
		Replicas: []replicaRow{{Name: hostile, Version: hostile, Hash: hostile, Differs: true}},
	}
	spec := everySecond(t, "job")
	entry := &history.Entry{Slot: "2026-01-01T00:00:00Z", Outcome: "failed", Reason: hostile,
		Replica: hostile, RunID: hostile, Attempts: 1, ErrorClass: hostile}
	sl := history.Slots{Job: "job", Slots: []history.SlotView{{Slot: entry.Slot, State: hostile, Entry: entry}}}
	v.Timeline = &timelineView{Job: "job"}
	buildTimeline(v.Timeline, sl, pageQuery{Job: "job", Slot: entry.Slot}, spec, time.Minute)
	require.NotNil(t, v.Timeline.Detail)
	var b bytes.Buffer
	require.NoError(t, render(&b, v))
	page := b.String()
	require.Equal(t, 1, strings.Count(page, "<script"), "only the page's own script element")
	require.Contains(t, page, `<script src="static/refresh.js"></script>`)
	require.NotContains(t, page, "<img")
	require.NotContains(t, page, "dataset.pwned=1</script>")
	require.Contains(t, page, "&lt;script&gt;document.body.dataset.pwned=1&lt;/script&gt;&lt;img src=x onerror=")
	require.Contains(t, page, `<td data-field="error class">&lt;script&gt;`)
}

// The handler: the page, its two assets and the API, each answer with the
// content security policy; read-only; unknown jobs and paths are 404.
func TestHandlerRoutes(t *testing.T) {
	l := locking.NewLocal(locking.Options{Replica: "r1"})
	defer l.Close()
	now := time.Now().Truncate(time.Second).Add(500 * time.Millisecond)
	ctx := context.Background()
	_, err := l.SetPause(ctx, "beat", locking.Pause{Paused: true, By: "me", Reason: hostile})
	require.NoError(t, err)
	specs := []scheduler.JobSpec{everySecond(t, "beat"), everySecond(t, "other")}
	h := Handler(Backend{Locker: l, Specs: specs, Hash: "h1", Now: func() time.Time { return now },
		SettleAfter: func(string) time.Duration { return time.Minute }})
	get := func(method, path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
		require.Contains(t, rec.Header().Get("Content-Security-Policy"), "script-src 'self'", path)
		return rec
	}
	slot := now.Add(-5 * time.Second).UTC().Truncate(time.Second).Format(time.RFC3339)
	rec := get("GET", "/?job=beat&since=2m&slot="+slot)
	require.Equal(t, 200, rec.Code)
	require.Equal(t, "text/html; charset=utf-8", rec.Header().Get("Content-Type"))
	page := rec.Body.String()
	require.Contains(t, page, "&lt;script&gt;document.body.dataset.pwned=1")
	require.Equal(t, 60, strings.Count(page, `class="c s-pending`), "two minutes of every-second slots, settling for a minute")
	require.Equal(t, 60, strings.Count(page, `class="c s-unrecorded`))
	require.Contains(t, page, `<div id="detail" data-slot="`+slot+`" data-state="pending">`)

	require.Equal(t, 200, get("GET", "/static/style.css").Code)
	require.Equal(t, "text/javascript; charset=utf-8", get("GET", "/static/refresh.js").Header().Get("Content-Type"))
	require.Equal(t, 404, get("GET", "/static/").Code)
	require.Equal(t, 404, get("GET", "/nothing").Code)
	require.Equal(t, 405, get("POST", "/").Code)

	rec = get("GET", "/api/v1/jobs?job=bea")
	require.Equal(t, 200, rec.Code, rec.Body.String())
	var doc struct {
		Hash  string `json:"definitions_hash"`
		Total int
		Jobs  []history.JobStatus
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &doc))
	require.Equal(t, "h1", doc.Hash)
	require.Equal(t, 1, doc.Total)
	require.Len(t, doc.Jobs, 1)
	require.Equal(t, hostile, doc.Jobs[0].Pause.Reason, "JSON carries the text as it is")

	rec = get("GET", "/api/v1/jobs/other/slots?since=10s")
	require.Equal(t, 200, rec.Code)
	var sl history.Slots
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &sl))
	require.Len(t, sl.Slots, 10)
	for _, c := range []struct{ path, want string }{
		{"/api/v1/jobs/nosuch/slots", `no job named \"nosuch\"`},
		{"/api/v1/jobs/beat/slots?since=yesterday", "since:"},
		{"/api/v1/jobs/beat/slots?since=1h&until=2h", "is before since"},
		{"/api/v1/jobs?limit=0", "limit:"},
		{"/api/v2/nothing", "no such endpoint"},
	} {
		rec := get("GET", c.path)
		require.Contains(t, []int{400, 404}, rec.Code, c.path)
		require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
		require.Contains(t, rec.Body.String(), c.want, c.path)
	}
}

func everySecond(t testing.TB, name string) scheduler.JobSpec {
	sched, err := scheduler.ParseSchedule("* * * * * *", time.UTC)
	require.NoError(t, err)
	return scheduler.JobSpec{Name: name, Spec: "* * * * * *", Schedule: sched, Location: time.UTC}
}

// The control audit reaches the page: each trigger, pause, resume and
// backfill recorded in the fleet log is a row naming the action, the job,
// who (OS user, host, replica) and when; an action on a job the page does
// not run is not shown, and none at all reads "none".
func TestPageShowsTheControlAudit(t *testing.T) {
	l := locking.NewLocal(locking.Options{Replica: "r1"})
	defer l.Close()
	now := time.Now().Truncate(time.Second).Add(500 * time.Millisecond)
	ctx := context.Background()
	specs := []scheduler.JobSpec{everySecond(t, "beat"), everySecond(t, "other")}
	h := Handler(Backend{Locker: l, Specs: specs, Hash: "h1", Now: func() time.Time { return now },
		SettleAfter: func(string) time.Duration { return time.Minute }, CacheFor: -1})
	controls := func() string {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		require.Equal(t, 200, rec.Code)
		page := rec.Body.String()
		from := strings.Index(page, `<section id="controls">`)
		require.Positive(t, from, "the page has no control section")
		return page[from : from+strings.Index(page[from:], "</section>")]
	}
	require.Contains(t, controls(), `<td colspan="5">none</td>`)

	for i, c := range []history.Control{
		{Action: history.ControlTrigger, Job: "beat", User: "alice", Host: "ops-1", Replica: "cli", Detail: "succeeded"},
		{Action: history.ControlPause, Job: "other", User: "bob", Host: "ops-2", Detail: "maintenance " + hostile},
		{Action: history.ControlResume, Job: "other", User: "bob", Host: "ops-2"},
		{Action: history.ControlBackfill, Job: "beat", User: "carol", Host: "ops-3", Replica: "ops-3", Detail: "10:00..11:00"},
		{Action: history.ControlPause, Job: "gone", User: "dave", Host: "ops-4"},
	} {
		at := now.Add(time.Duration(i-10) * time.Second)
		require.NoError(t, history.RecordControl(ctx, l, c, at))
	}
	got := controls()
	for _, want := range []string{
		"<td>trigger</td><td>beat</td><td>alice@ops-1 (cli)</td>",
		"<td>pause</td><td>other</td><td>bob@ops-2</td>",
		"<td>resume</td><td>other</td><td>bob@ops-2</td>",
		"<td>backfill</td><td>beat</td><td>carol@ops-3</td>",
		"<td>10:00..11:00</td>", "<td>succeeded</td>",
		now.Add(-7 * time.Second).UTC().Format(time.RFC3339),
		"maintenance &lt;script&gt;",
	} {
		require.Contains(t, got, want)
	}
	require.NotContains(t, got, "dave", "an action on a job the page does not run")
	require.NotContains(t, got, "none</td>")
}
