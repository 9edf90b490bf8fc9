//go:build linux

package e2e

import (
	"fmt"
	"slices"
	"time"
)

// Bursts (-scale.every N): every job runs `*/N * * * * *`, so all the
// window's slots fall on a few instants, each due for every job at
// once. What a user of such a schedule sees is how long after the
// instant the burst's last slot starts; these figures are read from the
// tally alone (its start delays are measured from each slot's nominal
// time, which for a burst is its instant).

// BurstStats summarises the bursts of one point.
type BurstStats struct {
	Instants   int     // instants in the window
	Due, Run   int     // slots due, and slots started at least once
	Duplicates int     // slots started more than once
	P50, P99   float64 // start delay after the instant, over every run, ms
	// LastMax is the latest start after its instant over all instants,
	// and LastMedian the median over instants of each one's latest
	// start, ms; instants where nothing started have no latest start
	// and are counted in Silent instead.
	LastMax, LastMedian float64
	Silent              int
}

// Shed is the share of the slots due that did not run (0..1).
func (b BurstStats) Shed() float64 {
	if b.Due == 0 {
		return 0
	}
	return float64(b.Due-b.Run) / float64(b.Due)
}

// Bursts computes the burst figures of a tally.
func (t SlotTally) Bursts() BurstStats {
	b := BurstStats{Due: t.Expected, Run: t.Slots, Duplicates: len(t.Duplicates),
		P50: t.Percentile(50), P99: t.Percentile(99)}
	every := t.Every
	if every <= 0 {
		every = time.Second
	}
	var lasts []float64
	for at := t.From; at.Before(t.To); at = at.Add(every) {
		b.Instants++
		sec := t.BySecond[at.Unix()]
		if sec == nil || len(sec.Delays) == 0 {
			b.Silent++
			continue
		}
		lasts = append(lasts, slices.Max(sec.Delays))
	}
	if len(lasts) > 0 {
		slices.Sort(lasts)
		b.LastMax = lasts[len(lasts)-1]
		b.LastMedian = median(lasts)
	}
	return b
}

// median of sorted values: the mean of the middle two when their number
// is even.
func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// BurstHeader is the columns a table gains when the jobs run in bursts;
// the start delay's p50 and p99 are the table's own column, which for
// bursts is measured from each slot's instant too.
const BurstHeader = "slots due | run | shed | duplicates | last start after the instant, max (median)"

// Cells are the burst columns of a row.
func (b BurstStats) Cells() []string {
	last := fmt.Sprintf("%s (%s)", msOrS(b.LastMax), msOrS(b.LastMedian))
	if b.Silent > 0 {
		last += fmt.Sprintf("; %d of %d instants started nothing", b.Silent, b.Instants)
	}
	return []string{thousands(b.Due), thousands(b.Run), fmt.Sprintf("%.1f %%", 100*b.Shed()),
		thousands(b.Duplicates), last}
}

// msOrS writes a delay in ms below a second, in seconds above.
func msOrS(ms float64) string {
	if ms >= 1000 {
		return fmt.Sprintf("%.2f s", ms/1000)
	}
	return fmt.Sprintf("%.0f ms", ms)
}

// burstWindow rounds a window to whole instants of period every: it
// opens at the first instant not before earliest and holds the fewest
// whole periods covering seconds.
func burstWindow(earliest time.Time, every time.Duration, seconds int) (from, to time.Time) {
	from = earliest.Truncate(every)
	if from.Before(earliest) {
		from = from.Add(every)
	}
	n := (time.Duration(seconds)*time.Second + every - 1) / every
	return from, from.Add(max(n, 1) * every)
}
