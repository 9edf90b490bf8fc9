package ui

import (
	"bytes"
	"html/template"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/scheduler/history"
)

// cellsTmpl is the cells' markup as html/template writes it.
var cellsTmpl = template.Must(template.New("cells").Parse(`{{range .Cells}}<a class="c {{.Class}}{{if .Selected}} sel{{end}}" href="{{.Href}}" title="{{.Title}}" data-slot="{{.Slot}}" data-state="{{.State}}"{{with .Reason}} data-reason="{{.}}"{{end}}></a>{{end}}`))

// The cells are written byte for byte as html/template writes them, hostile
// values (in every field, in the query the links carry, a selected cell)
// included.
func TestCellsAsTheTemplateWrote(t *testing.T) {
	spec := everySecond(t, "job")
	weird := hostile + "\x00 a+b 'q' & é"
	var sl history.Slots
	for i, state := range []history.Outcome{"succeeded", history.Outcome(weird), "skipped", "missed", "pending"} {
		slot := time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC).Format(time.RFC3339)
		v := history.SlotView{Slot: slot, State: state}
		if i != 4 {
			v.Entry = &history.Entry{Slot: slot, Outcome: state, Reason: history.Reason(weird), Replica: weird, ErrorClass: weird,
				Attempts: 1, DurationMS: 1500}
		}
		if i == 2 {
			v.Entry.Reason = history.ReasonPaused
		}
		sl.Slots = append(sl.Slots, v)
	}
	sl.Slots = append(sl.Slots, history.SlotView{Slot: weird, State: "unrecorded"})
	tv := &timelineView{Job: "job"}
	buildTimeline(tv, sl, pageQuery{Q: weird, Job: "job", Since: weird, Slot: sl.Slots[1].Slot}, spec, time.Minute)
	var want bytes.Buffer
	require.NoError(t, cellsTmpl.Execute(&want, tv))
	var got pageWriter
	got.cells(tv.Cells)
	require.Equal(t, want.String(), got.String())
	require.Contains(t, want.String(), " sel\"", "a selected cell")
	require.Contains(t, want.String(), "&#43;", "a + escaped")
	require.NotContains(t, want.String(), "<script")
}
