package ui

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/scheduler"
	"github.com/slotlock/slotlock/scheduler/history"
)

// updateGolden rewrites testdata/page-*.html from the renderer instead of
// comparing with them.
var updateGolden = flag.Bool("update", false, "rewrite the golden status pages")

// goldenClock is a replica's clock against the lock nodes' on the rich
// page (the other replica's is unknown).
var goldenClock int64 = -12

// goldenAt is the clock of every golden page.
var goldenAt = time.Date(2026, 12, 1, 15, 31, 0, 0, time.UTC)

// The page is rendered byte for byte as the golden pages in testdata say,
// for a rich fleet (every branch of the page: calendars, groups, notify
// rules, pauses, runs going on, a replica that differs, the control
// audit, a timeline of every state with a slot's detail), an idle one (a
// job that never ran, no replica alive, auto-refresh off), an empty one
// (no job matches) and a failed one (the stores did not answer). The
// pages were written by the html/template renderer, so the hand-written
// one escapes and lays out as it did.
func TestPageAsTheGoldenPages(t *testing.T) {
	for name, v := range map[string]pageView{
		"rich":   richPage(t),
		"idle":   idlePage(t),
		"empty":  emptyPage(),
		"failed": failedPage(),
	} {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, render(&b, v))
			path := filepath.Join("testdata", "page-"+name+".html")
			if *updateGolden {
				require.NoError(t, os.MkdirAll("testdata", 0o755))
				require.NoError(t, os.WriteFile(path, b.Bytes(), 0o644))
				return
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, string(want), b.String())
		})
	}
}

// odd is text from the stores (a pause reason, a replica name, an error
// class) with every character the escapers treat specially.
const odd = `db <migration> & "cleanup" 'now' +1 é` + "\x00"

func goldenSpec(t *testing.T, name, spec string, loc *time.Location) scheduler.JobSpec {
	t.Helper()
	sched, err := scheduler.ParseSchedule(spec, loc)
	require.NoError(t, err)
	return scheduler.JobSpec{Name: name, Spec: spec, Schedule: sched, Location: loc}
}

func richPage(t *testing.T) pageView {
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	report := goldenSpec(t, "nightly-report", "*/10 * * * * *", berlin)
	report.Notify = []scheduler.NotifyRule{{To: "oncall", On: []string{"failed", "recovered"}}, {To: "ops", On: []string{"missed"}}}
	specs := make([]scheduler.JobSpec, 120) // the page's total: a previous and a next page
	specs[0] = report
	s := &server{byName: map[string]scheduler.JobSpec{report.Name: report}}
	p := pageQuery{Q: "r+e", Job: report.Name, Since: "24h", Slot: "2026-12-01T15:30:10Z", Offset: 50}
	v := pageView{At: goldenAt.Format(time.RFC3339), Hash: "3a54a2c2aad6", Query: p, Refresh: refreshSeconds}
	toggle := p
	toggle.NoRefresh = true
	v.RefreshOff = toggle.href()
	until := goldenAt.Add(time.Hour)
	st := history.Status{
		Jobs: []history.JobStatus{
			{Job: report.Name, Schedule: report.Spec, Timezone: "Europe/Berlin", Enabled: true,
				NextSlot: "2026-12-01T16:31:10+01:00", NextSlotUTC: "2026-12-01T15:31:10Z",
				Calendar: "holidays", NextExcluded: "2026-12-24", Group: "exports", GroupLimit: 2,
				Pause: &history.PauseStatus{Since: goldenAt, Until: &until, By: "alice@ops-1", Reason: odd},
				Last:  &history.Entry{Slot: "2026-12-01T15:30:50Z", Outcome: history.OutcomeFailed, Reason: "", ErrorClass: "error"},
				Running: []history.RunInfo{
					{Job: report.Name, Slot: "2026-12-01T15:31:00Z", RunID: "84b5ad13b5171260", Token: 41, Replica: "replica-a", Since: goldenAt},
					{Job: report.Name, Slot: "manual", RunID: "b208524a157c5758", Token: 42, Replica: odd, Since: goldenAt},
				}},
			{Job: "cache-warmup", Schedule: "@every 5s", Timezone: "UTC", Enabled: false},
			{Job: "sync", Schedule: "@hourly", Timezone: "UTC", Enabled: true,
				NextSlot: "2026-12-01T16:00:00Z", NextSlotUTC: "2026-12-01T16:00:00Z",
				Pause: &history.PauseStatus{Since: goldenAt},
				Last:  &history.Entry{Slot: "2026-12-01T15:00:00Z", Outcome: history.OutcomeSkipped, Reason: history.ReasonPaused}},
		},
		Replicas: []history.ReplicaStatus{
			{ReplicaInfo: history.ReplicaInfo{Replica: "replica-a", Instance: "9f1c", Version: "v1.4.0", DefinitionsHash: "3a54a2c2aad6",
				Started: goldenAt.Add(-time.Hour), RunningCount: 1, ClockOffsetMS: &goldenClock}, Seen: goldenAt.Add(-2 * time.Second)},
			{ReplicaInfo: history.ReplicaInfo{Replica: odd, Instance: "0b7e", Started: goldenAt.Add(-time.Minute), RunningCount: 1},
				Seen: goldenAt, Differs: true},
		},
		Controls: []history.Control{
			{Action: history.ControlPause, Job: report.Name, User: "alice", Host: "ops-1", Replica: "cli", Detail: odd, At: goldenAt},
			{Action: history.ControlTrigger, Job: "sync", User: "bob", Host: "ops-2", At: goldenAt.Add(-time.Minute)},
		},
	}
	s.jobsView(&v, st, specs, p)
	v.Timeline = &timelineView{Job: report.Name, Schedule: report.Spec, Zone: zone(report)}
	buildTimeline(v.Timeline, richSlots(), p, report, time.Minute)
	v.Timeline.Max = 6
	v.Timeline.Notify = notifyText(report.Notify)
	v.Timeline.Notifications = []string{
		"2026-12-01T15:30:55Z failed (slot 2026-12-01T15:30:50Z) → oncall: sent after 2 tries, resent by replica-b",
		"2026-12-01T15:00:01Z missed (slot " + odd + ") → ops: pending",
	}
	return v
}

// richSlots is a window with a slot of every state.
func richSlots() history.Slots {
	sl := history.Slots{Job: "nightly-report", Since: goldenAt.Add(-24 * time.Hour), Until: goldenAt, Truncated: true}
	add := func(sec int, state history.Outcome, e *history.Entry) {
		slot := time.Date(2026, 12, 1, 15, 29+sec/60, sec%60, 0, time.UTC).Format(time.RFC3339)
		if e != nil {
			e.Slot, e.Outcome = slot, state
		}
		sl.Slots = append(sl.Slots, history.SlotView{Slot: slot, State: state, Entry: e})
	}
	add(0, history.OutcomeSucceeded, &history.Entry{Replica: "replica-a", RunID: "c404fb1e983b4553", Token: 1, Attempts: 1, DurationMS: 2})
	add(10, history.OutcomeMissed, &history.Entry{Reason: history.ReasonNoReplica})
	add(20, history.OutcomeAbandoned, &history.Entry{Replica: odd, RunID: "a1", Token: 2, Attempts: 1})
	add(30, history.OutcomeSkipped, &history.Entry{Reason: history.ReasonPaused, Replica: "replica-a"})
	add(40, history.OutcomeSkipped, &history.Entry{Reason: history.ReasonOverlap, Replica: "replica-a"})
	add(50, history.OutcomeCanceled, &history.Entry{Reason: history.ReasonLockLost, Replica: "replica-a", RunID: "c1", Token: 3, Attempts: 1, DurationMS: 1500})
	add(60, "unrecorded", nil)
	add(70, history.OutcomeFailed, &history.Entry{Reason: history.Reason(odd), Replica: "replica-a", RunID: odd, Token: 4, Attempts: 3,
		DurationMS: 61000, ErrorClass: odd})
	add(80, history.OutcomeSucceeded, &history.Entry{Replica: "replica-b", RunID: "d2", Token: 5, Attempts: 1, DurationMS: 7, Recovered: true})
	add(90, history.SlotRunning, nil)
	add(100, history.SlotPending, nil)
	add(110, history.Outcome(odd), nil)
	return sl
}

// idlePage: a job that never ran, the detail of a slot outside the window,
// no notification sent, no replica alive, no control, auto-refresh off.
func idlePage(t *testing.T) pageView {
	spec := goldenSpec(t, "tick", "@every 1m", time.UTC)
	spec.Notify = []scheduler.NotifyRule{{To: "oncall", On: []string{"abandoned"}}}
	s := &server{byName: map[string]scheduler.JobSpec{spec.Name: spec}}
	p := pageQuery{Job: spec.Name, Slot: "2020-01-01T00:00:00Z", NoRefresh: true}
	v := pageView{At: goldenAt.Format(time.RFC3339), Hash: "", Query: p}
	toggle := p
	toggle.NoRefresh = false
	v.RefreshOff = toggle.href()
	s.jobsView(&v, history.Status{Jobs: []history.JobStatus{{Job: spec.Name, Schedule: spec.Spec, Timezone: "UTC", Enabled: true,
		NextSlot: "2026-12-01T15:32:00Z", NextSlotUTC: "2026-12-01T15:32:00Z"}}}, []scheduler.JobSpec{spec}, p)
	v.Timeline = &timelineView{Job: spec.Name, Schedule: spec.Spec, Zone: zone(spec)}
	sl := history.Slots{Job: spec.Name, Since: goldenAt.Add(-2 * time.Minute), Until: goldenAt}
	for i := 2; i > 0; i-- {
		slot := goldenAt.Add(-time.Duration(i) * time.Minute).Format(time.RFC3339)
		sl.Slots = append(sl.Slots, history.SlotView{Slot: slot, State: "unrecorded"})
	}
	buildTimeline(v.Timeline, sl, p, spec, time.Minute)
	v.Timeline.Max = 1000
	v.Timeline.Notify = notifyText(spec.Notify)
	return v
}

// emptyPage: no job matches the filter, nothing selected.
func emptyPage() pageView {
	p := pageQuery{Q: "nothing"}
	v := pageView{At: goldenAt.Format(time.RFC3339), Hash: "3a54a2c2aad6", Query: p, Refresh: refreshSeconds}
	toggle := p
	toggle.NoRefresh = true
	v.RefreshOff = toggle.href()
	(&server{}).jobsView(&v, history.Status{}, nil, p)
	return v
}

// failedPage is what page makes when the stores do not answer: the error,
// no job, and the selected job's timeline saying so.
func failedPage() pageView {
	p := pageQuery{Job: "nightly-report", Since: "1h"}
	v := pageView{At: goldenAt.Format(time.RFC3339), Hash: "3a54a2c2aad6", Query: p, Refresh: refreshSeconds,
		Error: "The lock stores did not answer."}
	toggle := p
	toggle.NoRefresh = true
	v.RefreshOff = toggle.href()
	v.Timeline = &timelineView{Job: "nightly-report", Schedule: "*/10 * * * * *", Zone: "UTC", Error: "The lock stores did not answer."}
	return v
}
