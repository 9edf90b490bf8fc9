//go:build linux

package e2e

import (
	"strings"
	"time"
)

// Helpers of the checker: selecting runs, and formatting runs, times and
// log lines for the evidence.

// RunsStartedIn returns the runs whose first start lies in [from, to].
func RunsStartedIn(runs []Run, from, to time.Time) []Run {
	var out []Run
	for _, r := range runs {
		if !r.Start.Before(from) && !r.Start.After(to) {
			out = append(out, r)
		}
	}
	return out
}

func describe(evs []Event) string {
	if len(evs) == 0 {
		return "(nothing)"
	}
	var parts []string
	for _, e := range evs {
		s := e.Replica + " " + e.Event
		if e.Reason != "" {
			s += " reason=" + e.Reason
		}
		if e.Holder != "" {
			s += " holder=" + e.Holder
		}
		if e.Error != "" {
			s += " error=" + e.Error
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func slotString(r Run) string {
	if r.Manual {
		return "manual"
	}
	return r.Slot.Format(time.RFC3339)
}

func stamp(t time.Time) string { return t.UTC().Format("15:04:05.000") }

func endString(r Run, e time.Time) string {
	if r.End.IsZero() {
		return stamp(e) + "(no end line)"
	}
	return stamp(e)
}
