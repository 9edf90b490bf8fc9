package ui

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/slotlock/slotlock/scheduler"
	"github.com/slotlock/slotlock/scheduler/history"
)

// The page: one GET with its state in the query, so every view is a link.
//
//	q=SUB        jobs whose name contains SUB      offset=N  the jobs table's page
//	job=NAME     the job whose timeline is shown   since=DUR|TIME  its window (default 1h)
//	slot=TIME    the slot whose detail is shown    refresh=0  no auto-refresh

// pageJobs is the jobs table's page size.
const pageJobs = 50

// refreshSeconds is the page's auto-refresh interval (refresh.js).
const refreshSeconds = 15

// windows are the timeline's window links.
var windows = []struct{ label, since string }{{"last hour", "1h"}, {"last day", "24h"}, {"last week", "168h"}}

// pageQuery is the page's state.
type pageQuery struct {
	Q, Job, Since, Slot string
	Offset              int
	NoRefresh           bool
}

func readQuery(r *http.Request) pageQuery {
	v := r.URL.Query()
	p := pageQuery{Q: v.Get("q"), Job: v.Get("job"), Since: v.Get("since"), Slot: v.Get("slot"), NoRefresh: v.Get("refresh") == "0"}
	p.Offset, _ = strconv.Atoi(v.Get("offset"))
	p.Offset = max(p.Offset, 0)
	return p
}

// href is the link to the page in state p.
func (p pageQuery) href() string {
	v := url.Values{}
	for k, s := range map[string]string{"q": p.Q, "job": p.Job, "since": p.Since, "slot": p.Slot} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if p.Offset > 0 {
		v.Set("offset", strconv.Itoa(p.Offset))
	}
	if p.NoRefresh {
		v.Set("refresh", "0")
	}
	return "?" + v.Encode()
}

// pageView is what the page shows (render.go writes it).
type pageView struct {
	At, Hash   string
	Refresh    int    // seconds; 0: off
	RefreshOff string // the link that turns auto-refresh off (or on)
	Error      string
	Query      pageQuery
	Jobs       []jobRow
	JobsFrom   int
	JobsTo     int
	JobsTotal  int
	Prev, Next string // the jobs table's page links ("" at an end)
	Timeline   *timelineView
	Replicas   []replicaRow
	Controls   []controlRow
}

type controlRow struct{ Action, Job, By, At, Detail string }

type jobRow struct {
	Name, Href, Schedule, Zone, Next, NextUTC string
	Calendar, NextExcluded                    string // "" without a calendar
	Notify                                    string // the job's notify rules; "" for none
	Group                                     string // "name (limit N)"; "" without a group
	Selected, Disabled                        bool
	Paused                                    string // "" when not paused
	LastState, LastClass, LastText            string
	Running                                   []string
}

type replicaRow struct {
	Name, Instance, Version, Hash, Started, Seen, Clock string
	Differs                                             bool
	Running                                             int
}

func (s *server) page(w http.ResponseWriter, r *http.Request) {
	p := readQuery(r)
	now := s.now()
	v := pageView{At: now.UTC().Format(time.RFC3339), Hash: s.b.Hash, Query: p, Refresh: refreshSeconds}
	if p.NoRefresh {
		v.Refresh = 0
	}
	toggle := p
	toggle.NoRefresh = !p.NoRefresh
	v.RefreshOff = toggle.href()
	code := http.StatusOK
	specs := s.filterJobs(p.Q)
	st, err := s.status(r.Context(), specs, p.Offset, pageJobs, now)
	if err != nil {
		// Not the error's text: it names node addresses (the log has it).
		v.Error, code = "The lock stores did not answer.", http.StatusServiceUnavailable
	} else {
		s.jobsView(&v, st, specs, p)
	}
	if p.Job != "" {
		v.Timeline = s.timeline(r, p, now)
	}
	var buf bytes.Buffer
	if err := render(&buf, v); err != nil {
		http.Error(w, "rendering the page failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

func (s *server) jobsView(v *pageView, st history.Status, specs []scheduler.JobSpec, p pageQuery) {
	v.JobsTotal = len(specs)
	v.JobsFrom, v.JobsTo = min(p.Offset, len(specs))+1, min(p.Offset+pageJobs, len(specs))
	if p.Offset > 0 {
		prev := p
		prev.Offset = max(p.Offset-pageJobs, 0)
		v.Prev = prev.href()
	}
	if v.JobsTo < len(specs) {
		next := p
		next.Offset = v.JobsTo
		v.Next = next.href()
	}
	for _, j := range st.Jobs {
		link := p
		link.Job, link.Slot = j.Job, ""
		row := jobRow{Name: j.Job, Href: link.href(), Schedule: j.Schedule, Zone: j.Timezone, Next: dash(j.NextSlot),
			NextUTC: j.NextSlotUTC, Selected: j.Job == p.Job, Disabled: !j.Enabled, LastText: "-",
			Calendar: j.Calendar, NextExcluded: dash(j.NextExcluded), Notify: notifyText(s.byName[j.Job].Notify)}
		if j.Group != "" {
			row.Group = fmt.Sprintf("%s (limit %d)", j.Group, j.GroupLimit)
		}
		if j.Pause != nil {
			row.Paused = pauseText(j.Pause)
		}
		if e := j.Last; e != nil {
			row.LastState, row.LastClass = string(e.Outcome), stateClass(e.Outcome, e.Reason)
			row.LastText = withReason(e.Outcome, e.Reason) + " at " + e.Slot
		}
		for _, run := range j.Running {
			row.Running = append(row.Running, fmt.Sprintf("%s on %s (run %s, token %d, since %s)", run.Slot, run.Replica,
				run.RunID, run.Token, run.Since.UTC().Format(time.RFC3339)))
		}
		v.Jobs = append(v.Jobs, row)
	}
	for _, r := range st.Replicas {
		v.Replicas = append(v.Replicas, replicaRow{Name: r.Replica, Instance: r.Instance, Version: dash(r.Version), Hash: dash(r.DefinitionsHash),
			Started: r.Started.UTC().Format(time.RFC3339), Seen: r.Seen.UTC().Format(time.RFC3339),
			Differs: r.Differs, Running: r.RunningCount, Clock: r.ClockText()})
	}
	for _, c := range st.Controls {
		v.Controls = append(v.Controls, controlRow{Action: c.Action, Job: c.Job, By: c.Who(),
			At: c.At.UTC().Format(time.RFC3339), Detail: dash(c.Detail)})
	}
}

func pauseText(ps *history.PauseStatus) string {
	s := "until resumed"
	if ps.Until != nil {
		s = "until " + ps.Until.UTC().Format(time.RFC3339)
	}
	if ps.By != "" {
		s += ", by " + ps.By
	}
	if ps.Reason != "" {
		s += ": " + ps.Reason
	}
	return s
}

// stateClass is a timeline state's CSS class: a paused skip and a missed
// slot look unlike any other.
func stateClass(state history.Outcome, reason history.Reason) string {
	if state == history.OutcomeSkipped && reason == history.ReasonPaused {
		return "s-paused"
	}
	switch state {
	case history.OutcomeSucceeded, history.OutcomeFailed, history.OutcomeCanceled, history.OutcomeAbandoned,
		history.OutcomeSkipped, history.OutcomeMissed, history.SlotPending, history.SlotRunning:
		return "s-" + string(state)
	}
	return "s-unrecorded"
}

func withReason(state history.Outcome, reason history.Reason) string {
	if reason == "" {
		return string(state)
	}
	return string(state) + " (" + string(reason) + ")"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// jobsHeading is "jobs 1–50 of 1234" (or "no job matches").
func (v pageView) jobsHeading() string {
	if v.JobsTotal == 0 {
		return "no job matches"
	}
	return fmt.Sprintf("jobs %d–%d of %d", v.JobsFrom, v.JobsTo, v.JobsTotal)
}
