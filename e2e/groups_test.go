//go:build linux

package e2e

import (
	"testing"
	"time"
)

// GroupSpans and MostAtOnce on hand-made ledgers: a stale run of a frozen
// replica counts until its freeze (also when its end line is written a
// moment before the freeze's end is recorded), a killed run until the
// kill, and a run that simply spans a short freeze counts whole.
func TestGroupSpans(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(1000, 0).Add(time.Duration(ms) * time.Millisecond) }
	jobs := map[string]bool{"a": true, "b": true, "c": true}
	runs := []Run{
		{Job: "a", Replica: "r3", Token: 10, Start: at(0), End: at(6996), Outcome: "ok"},           // frozen 1000..7000, ended as it woke
		{Job: "b", Replica: "r1", Token: 11, Start: at(3000), End: at(4500), Outcome: "ok"},        // took a's permit
		{Job: "c", Replica: "r2", Token: 12, Start: at(3100), End: at(4600), Outcome: "ok"},        // the other permit
		{Job: "x", Replica: "r2", Token: 1, Start: at(3200), End: at(4000), Outcome: "ok"},         // not in the group
		{Job: "b", Replica: "r2", Token: 13, Start: at(5000)},                                      // killed at 5500
		{Job: "c", Replica: "r1", Token: 14, Start: at(5200), End: at(6000), Outcome: "ok"},        // with the killed one: 2
		{Job: "a", Replica: "r1", Token: 15, Start: at(8000), End: at(9500), Outcome: "ok"},        // spans r1's short freeze
		{Job: "b", Replica: "r2", Token: 16, Start: at(8100), End: at(9000), Outcome: "ok"},        //
		{Job: "c", Replica: "r3", Token: 17, Start: at(9600), End: at(12000), Outcome: "canceled"}, // frozen 10000..13000, canceled late
	}
	kills := []Kill{{Replica: "r2", At: at(5500)}}
	freezes := []Freeze{{Replica: "r3", From: at(1000), To: at(7000)}, {Replica: "r1", From: at(8500), To: at(8700)}}
	spans := GroupSpans(runs, jobs, kills, freezes, at(20000), 2*time.Second)
	if len(spans) != 8 {
		t.Fatalf("%d spans, want 8 (job x is not in the group)", len(spans))
	}
	if !spans[0].End.Equal(at(1000)) {
		t.Errorf("stale run counted until %v, want its freeze's start", spans[0].End)
	}
	if !spans[3].End.Equal(at(5500)) {
		t.Errorf("killed run counted until %v, want the kill", spans[3].End)
	}
	if !spans[5].End.Equal(at(9500)) {
		t.Errorf("a run spanning a short freeze counted until %v, want its end", spans[5].End)
	}
	if most, _ := MostAtOnce(spans, at(0), at(20000)); most != 2 {
		t.Errorf("MostAtOnce = %d, want 2", most)
	}
	// Without the freeze's excuse the stale run overlaps two others.
	if most, when := MostAtOnce(GroupSpans(runs, jobs, kills, nil, at(20000), 2*time.Second), at(0), at(20000)); most != 3 || !when.Equal(at(3100)) {
		t.Errorf("without freezes: %d at %v, want 3 at %v", most, when, at(3100))
	}
}
