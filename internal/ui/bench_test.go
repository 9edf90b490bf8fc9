package ui

import (
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"
)

// The page with a window of 10,000 slots (every outcome, a detail open, a
// page of 50 jobs and three replicas), built and rendered from memory: the
// cost of the page itself, without the stores. It must stay well under a
// second (docs/operations.md gives the figure).
//
//	go test ./internal/ui -run '^$' -bench RenderTimeline10k -benchmem
func BenchmarkRenderTimeline10k(b *testing.B) {
	const n = history.MaxWindowSlots
	spec := everySecond(b, "every-second")
	start := time.Date(2026, 3, 9, 10, 0, 0, 0, time.UTC)
	sl := history.Slots{Job: spec.Name, Since: start, Until: start.Add(n * time.Second), Slots: make([]history.SlotView, n)}
	for i := range sl.Slots {
		slot := start.Add(time.Duration(i) * time.Second).Format(time.RFC3339)
		e := &history.Entry{Slot: slot, Outcome: history.OutcomeSucceeded, Replica: fmt.Sprintf("replica-%d", i%3),
			RunID: fmt.Sprintf("%016x", i*7919), Token: uint64(i + 1), Attempts: 1, DurationMS: int64(i % 900)}
		switch {
		case i%97 == 0:
			e.Outcome, e.ErrorClass = history.OutcomeFailed, "exit_status"
		case i%89 == 0:
			e = &history.Entry{Slot: slot, Outcome: history.OutcomeMissed, Reason: history.ReasonNoReplica}
		case i%83 == 0:
			e = &history.Entry{Slot: slot, Outcome: history.OutcomeSkipped, Reason: history.ReasonPaused}
		case i > n-5:
			e = nil
		}
		v := history.SlotView{Slot: slot, State: history.SlotPending, Entry: e}
		if e != nil {
			v.State = e.Outcome
		}
		sl.Slots[i] = v
	}
	v := pageView{At: start.Format(time.RFC3339), Hash: "0123456789ab", Refresh: refreshSeconds, JobsFrom: 1, JobsTo: 50, JobsTotal: 5000}
	for i := range 50 {
		v.Jobs = append(v.Jobs, jobRow{Name: fmt.Sprintf("job-%04d", i), Href: "?job=x", Schedule: "* * * * * *", Zone: "UTC",
			Next: "2026-03-09T13:00:00Z", LastState: "succeeded", LastClass: "s-succeeded", LastText: "succeeded at 2026-03-09T12:59:59Z"})
	}
	for i := range 3 {
		v.Replicas = append(v.Replicas, replicaRow{Name: fmt.Sprintf("replica-%d", i), Version: "v1.2.3", Hash: "0123456789ab"})
	}
	p := pageQuery{Job: spec.Name, Since: "168h", Slot: sl.Slots[n/2].Slot}
	var size int
	b.ReportAllocs()
	for b.Loop() {
		page := v
		page.Timeline = &timelineView{Job: spec.Name, Schedule: spec.Spec, Zone: "UTC"}
		buildTimeline(page.Timeline, sl, p, spec, time.Minute)
		w := &countWriter{}
		if err := render(w, page); err != nil {
			b.Fatal(err)
		}
		size = w.n
	}
	b.ReportMetric(float64(size), "bytes/page")
}

type countWriter struct{ n int }

func (c *countWriter) Write(p []byte) (int, error) { c.n += len(p); return len(p), nil }

var _ io.Writer = (*countWriter)(nil)
