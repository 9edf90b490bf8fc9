//go:build linux

package e2e

import (
	"sort"
	"time"
)

// Judging a concurrency group from the ledger: how many runs of its jobs
// went on at once.

// GroupSpan is one run's time holding its group's permit as the ledger
// shows it: from its start line to its end line (or its replica's kill).
type GroupSpan struct {
	Run        Run
	Start, End time.Time
}

// GroupSpans are the runs of jobs, each cut where the contract's one
// exception says it stopped counting: a run whose replica was frozen
// under it (SIGSTOP: its body stopped too) past its permit, and that was
// canceled within cancelWithin of the replica waking (or ended by itself
// within quickEnd of it), counts until the freeze began — its permit
// could expire meanwhile, and another run have taken it.
func GroupSpans(runs []Run, jobs map[string]bool, kills []Kill, freezes []Freeze, now time.Time, cancelWithin time.Duration) []GroupSpan {
	var out []GroupSpan
	for _, r := range runs {
		if !jobs[r.Job] {
			continue
		}
		s := GroupSpan{Run: r, Start: r.Start, End: runEnd(r, kills, now)}
		for _, f := range freezes {
			if f.Replica != r.Replica || f.To.Before(r.Start) || f.From.After(s.End) {
				continue
			}
			// Its end may be logged a moment before the freeze's end is
			// (the body wakes as SIGCONT is sent): no lower bound.
			stale := !s.End.After(f.To.Add(cancelWithin)) &&
				(r.Outcome == "canceled" || !s.End.After(f.To.Add(quickEnd)))
			if stale {
				s.End = maxTime(f.From, r.Start)
			}
		}
		out = append(out, s)
	}
	return out
}

// MostAtOnce is the largest number of spans going on at one instant, and
// the first instant it was reached. A span that ends as another starts
// does not overlap it.
func MostAtOnce(spans []GroupSpan, from, to time.Time) (int, time.Time) {
	type edge struct {
		at time.Time
		d  int
	}
	var edges []edge
	for _, s := range spans {
		if s.End.Before(from) || s.Start.After(to) {
			continue
		}
		edges = append(edges, edge{s.Start, 1}, edge{s.End, -1})
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at.Equal(edges[j].at) {
			return edges[i].d < edges[j].d
		}
		return edges[i].at.Before(edges[j].at)
	})
	most, n, at := 0, 0, time.Time{}
	for _, e := range edges {
		n += e.d
		if n > most {
			most, at = n, e.at
		}
	}
	return most, at
}

// groupWaitAround: a slot of job other than t was skipped group_full
// within max_clock_skew + 0.5 s before t and the lateness bound (skew +
// 1 s) and 0.5 s after it — an attempt that held the job lease while it
// waited for a permit, so that slot t of a forbid job found the lease
// held although no run of the job was going on.
func (s *scenario) groupWaitAround(job string, t time.Time) bool {
	tol := s.Skew + 500*time.Millisecond
	for _, e := range s.Events {
		if e.Event != "slot.skipped" || e.Reason != "group_full" || e.Job != job || e.Slot == t.Format(time.RFC3339) {
			continue
		}
		if !e.Time.Before(t.Add(-tol)) && !e.Time.After(t.Add(s.Skew+time.Second+tol)) {
			return true
		}
	}
	return false
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
