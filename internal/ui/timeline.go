package ui

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/slotlock/slotlock/scheduler"
	"github.com/slotlock/slotlock/scheduler/history"
)

// A job's slot timeline: one cell per nominal slot of the window, coloured
// by its state, each a link to the page with that slot's detail open.

type timelineView struct {
	Job, Schedule, Zone string
	Error               string
	Windows             []windowLink
	Since, Until        string
	Truncated           bool
	Max                 int
	Counts              []stateCount
	Cells               []cellView
	Detail              *detailView
	// Notify names the job's notify rules; Notifications are its latest
	// notifications' results (notify.go).
	Notify        string
	Notifications []string
}

type windowLink struct {
	Label, Href string
	Current     bool
}

type stateCount struct {
	State, Class string
	N            int
}

type cellView struct {
	Slot, State, Reason, Class, Title, Href string
	Selected                                bool
}

type detailView struct {
	Slot, Local, State, Class, Note string
	Rows                            []detailRow
	Close                           string
}

type detailRow struct{ Name, Value string }

// timeline reads and builds p.Job's timeline.
func (s *server) timeline(r *http.Request, p pageQuery, now time.Time) *timelineView {
	spec, ok := s.byName[p.Job]
	if !ok {
		return &timelineView{Job: p.Job, Error: "No job of that name in the configuration."}
	}
	tv := &timelineView{Job: spec.Name, Schedule: spec.Spec, Zone: zone(spec)}
	since, until, err := window(p.Since, "", now)
	if err != nil {
		tv.Error = "The window: " + err.Error()
		return tv
	}
	sl, err := s.slots(r.Context(), spec, since, until, now, s.maxSlots())
	if err != nil {
		tv.Error = "The lock stores did not answer." // not the text: it names node addresses
		return tv
	}
	buildTimeline(tv, sl, p, spec, s.settleAfter(spec.Name))
	tv.Max = s.maxSlots()
	tv.Notify, tv.Notifications = notifyText(spec.Notify), s.notifyRows(r.Context(), spec)
	return tv
}

// buildTimeline fills tv from sl: the window links, counts, cells and the
// detail of p.Slot.
func buildTimeline(tv *timelineView, sl history.Slots, p pageQuery, spec scheduler.JobSpec, settle time.Duration) {
	tv.Since, tv.Until = sl.Since.Format(time.RFC3339), sl.Until.Format(time.RFC3339)
	tv.Truncated, tv.Max = sl.Truncated, history.MaxWindowSlots
	current := p.Since
	if current == "" {
		current = windows[0].since
	}
	for _, w := range windows {
		q := p
		q.Since, q.Slot = w.since, ""
		tv.Windows = append(tv.Windows, windowLink{Label: w.label, Href: q.href(), Current: w.since == current})
	}
	counts := map[string]int{}
	order := []string{}
	cellQ := p
	cellQ.Since = current
	base := cellQ
	base.Slot = ""
	prefix := base.href() + "&slot="
	tv.Cells = make([]cellView, len(sl.Slots))
	for i, v := range sl.Slots {
		var reason history.Reason
		if v.Entry != nil {
			reason = v.Entry.Reason
		}
		c := cellView{Slot: v.Slot, State: string(v.State), Reason: string(reason), Class: stateClass(v.State, reason),
			Href: prefix + url.QueryEscape(v.Slot) + "#detail", Selected: v.Slot == p.Slot}
		c.Title = cellTitle(v)
		tv.Cells[i] = c
		label := withReason(v.State, reason)
		if v.State == history.OutcomeFailed || v.State == history.OutcomeMissed {
			label = string(v.State)
		}
		if counts[label] == 0 {
			order = append(order, label)
		}
		counts[label]++
		if c.Selected {
			tv.Detail = detail(v, c.Class, spec, settle)
			tv.Detail.Close = base.href()
		}
	}
	for _, l := range order {
		state, reason, _ := strings.Cut(l, " (")
		tv.Counts = append(tv.Counts, stateCount{State: l, Class: stateClass(history.Outcome(state), history.Reason(strings.TrimSuffix(reason, ")"))), N: counts[l]})
	}
	if p.Slot != "" && tv.Detail == nil {
		tv.Detail = &detailView{Slot: p.Slot, Class: "s-unrecorded", State: "not in this window",
			Note: "This slot is not a nominal slot of the job in the window shown.", Close: base.href()}
	}
}

// cellTitle is a cell's tooltip: the slot, its state and who ran it.
func cellTitle(v history.SlotView) string {
	var b strings.Builder
	b.WriteString(v.Slot)
	b.WriteString(" · ")
	b.WriteString(string(v.State))
	if e := v.Entry; e != nil {
		if e.Reason != "" {
			b.WriteString(" (" + string(e.Reason) + ")")
		}
		if e.Replica != "" {
			b.WriteString(" · " + e.Replica)
		}
		if e.Attempts > 0 {
			b.WriteString(" · " + (time.Duration(e.DurationMS) * time.Millisecond).String())
		}
		if e.ErrorClass != "" {
			b.WriteString(" · " + e.ErrorClass)
		}
	}
	return b.String()
}

// detail is the detail of slot v.
func detail(v history.SlotView, class string, spec scheduler.JobSpec, settle time.Duration) *detailView {
	d := &detailView{Slot: v.Slot, State: string(v.State), Class: class}
	if t, err := time.Parse(time.RFC3339, v.Slot); err == nil && spec.Location != nil && spec.Location != time.UTC {
		d.Local = t.In(spec.Location).Format(time.RFC3339) + " " + spec.Location.String()
	}
	e := v.Entry
	if e == nil {
		switch v.State {
		case history.SlotRunning:
			d.Note = "A claim of this slot is open: a run is going on, or one was abandoned and is not yet settled."
		case history.SlotPending:
			d.Note = "No outcome yet: the slot is in the future, or too recent (a slot is judged once " + settle.String() + " old)."
		default:
			d.Note = "No outcome recorded: the reconciler has not judged this slot (it is off, behind, or the slot is from before these job definitions ran)."
		}
		return d
	}
	add := func(name, value string) {
		if value != "" && value != "0" {
			d.Rows = append(d.Rows, detailRow{name, value})
		}
	}
	add("reason", string(e.Reason))
	add("replica", e.Replica)
	add("run id", e.RunID)
	add("fencing token", strconv.FormatUint(e.Token, 10))
	add("attempts", strconv.Itoa(e.Attempts))
	if e.Attempts > 0 {
		add("duration", (time.Duration(e.DurationMS) * time.Millisecond).String())
	}
	add("error class", e.ErrorClass)
	return d
}

func zone(spec scheduler.JobSpec) string {
	if spec.Location == nil {
		return "UTC"
	}
	return spec.Location.String()
}

// timeline is the selected job's section: its window, counts, cells, the
// open slot's detail and its notifications.
func (w *pageWriter) timeline(tv *timelineView) {
	w.raw("<section id=\"timeline\" data-job=\"")
	w.text(tv.Job)
	w.raw("\">\n  <h2>Slots of <code>")
	w.text(tv.Job)
	w.raw("</code></h2>\n  ")
	if tv.Error != "" {
		w.raw(`<p class="error">`)
		w.text(tv.Error)
		w.raw("</p>")
	} else {
		w.window(tv)
	}
	w.raw("\n  ")
	if tv.Notify != "" {
		w.raw("\n  <div id=\"notifications\">\n    <h3>Notifications</h3>\n    <p class=\"meta\">notify ")
		w.text(tv.Notify)
		w.raw(" · the latest, newest first</p>\n    <ul>")
		for _, n := range tv.Notifications {
			w.raw("<li>")
			w.text(n)
			w.raw("</li>")
		}
		if len(tv.Notifications) == 0 {
			w.raw("<li>none sent yet</li>")
		}
		w.raw("</ul>\n  </div>\n  ")
	}
	w.raw("\n</section>\n")
}

// window is a timeline read without error: its window links, counts,
// cells and the open slot's detail.
func (w *pageWriter) window(tv *timelineView) {
	w.raw("\n  <p class=\"meta\"><code>")
	w.text(tv.Schedule)
	w.raw("</code> (")
	w.text(tv.Zone)
	w.raw(") · window\n    ")
	for _, l := range tv.Windows {
		if l.Current {
			w.raw("<strong>")
			w.text(l.Label)
			w.raw("</strong>")
		} else {
			w.raw(`<a href="`)
			w.url(l.Href)
			w.raw(`">`)
			w.text(l.Label)
			w.raw("</a>")
		}
		w.raw(" ")
	}
	w.raw("\n    · ")
	w.text(tv.Since)
	w.raw(" to ")
	w.text(tv.Until)
	w.raw(" · ")
	w.int(len(tv.Cells))
	w.raw(" slots, oldest first</p>\n  ")
	if tv.Truncated {
		w.raw(`<p class="note">The window holds more than `)
		w.int(tv.Max)
		w.raw(" slots: the newest ")
		w.int(tv.Max)
		w.raw(" are shown.</p>")
	}
	w.raw("\n  <ul class=\"legend\">")
	for _, c := range tv.Counts {
		w.raw(`<li><span class="dot `)
		w.text(c.Class)
		w.raw(`"></span> `)
		w.text(c.State)
		w.raw(" <strong>")
		w.int(c.N)
		w.raw("</strong></li>")
	}
	w.raw("</ul>\n  <div class=\"timeline\">")
	w.cells(tv.Cells)
	w.raw("</div>\n  ")
	if tv.Detail != nil {
		w.detail(tv.Detail)
	}
	w.raw("\n  ")
}

// detail is the open slot's detail.
func (w *pageWriter) detail(d *detailView) {
	w.raw("\n  <div id=\"detail\" data-slot=\"")
	w.text(d.Slot)
	w.raw(`" data-state="`)
	w.text(d.State)
	w.raw("\">\n    <h3><span class=\"dot ")
	w.text(d.Class)
	w.raw(`"></span> `)
	w.text(d.Slot)
	w.raw(" · ")
	w.text(d.State)
	w.raw(` <a class="close" href="`)
	w.url(d.Close)
	w.raw("\">close</a></h3>\n    ")
	if d.Local != "" {
		w.raw(`<p class="meta">`)
		w.text(d.Local)
		w.raw("</p>")
	}
	w.raw("\n    ")
	if d.Note != "" {
		w.raw("<p>")
		w.text(d.Note)
		w.raw("</p>")
	}
	w.raw("\n    ")
	if len(d.Rows) > 0 {
		w.raw(`<table class="detail">`)
		for _, r := range d.Rows {
			w.raw("<tr><th>")
			w.text(r.Name)
			w.raw(`</th><td data-field="`)
			w.text(r.Name)
			w.raw(`">`)
			w.text(r.Value)
			w.raw("</td></tr>")
		}
		w.raw("</table>")
	}
	w.raw("\n  </div>\n  ")
}
