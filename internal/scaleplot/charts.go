package scaleplot

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
)

// Charts draws the performance page's charts from the points of every data
// file, in the files' order (a later file's point replaces an earlier one's
// for the same jobs and setup). A setup with fewer than two points draws no
// line.
//
// Points of bursts are drawn apart, on the burst chart alone, when there
// are any.
func Charts(points []Point) map[string]Chart {
	bySetup := map[string]map[int]Point{}
	var bursts []Point
	for _, p := range points {
		if p.Burst {
			bursts = append(bursts, p)
			continue
		}
		if bySetup[p.Setup] == nil {
			bySetup[p.Setup] = map[int]Point{}
		}
		bySetup[p.Setup][p.Jobs] = p
	}
	setups := slices.Sorted(maps.Keys(bySetup))
	throughput := Chart{
		Title:  "Slots run per second against slots due (replicas × nodes, overlap)",
		XLabel: "every-second jobs offered (slots due per second)",
		YLabel: "slots run per second",
		LogX:   true, LogY: true,
	}
	delay := Chart{
		Title:  "Start delay p99 (dashed: p50)",
		XLabel: "every-second jobs offered",
		YLabel: "start delay, ms",
		LogX:   true, LogY: true,
	}
	var offered []XY
	for _, s := range setups {
		pts := slices.SortedFunc(maps.Values(bySetup[s]), func(a, b Point) int { return cmp.Compare(a.Jobs, b.Jobs) })
		if len(pts) < 2 {
			continue
		}
		color := palette[len(throughput.Series)%len(palette)]
		var run, p50, p99 []XY
		for _, p := range pts {
			run = append(run, XY{float64(p.Jobs), p.RunPerS})
			p50 = append(p50, XY{float64(p.Jobs), p.P50})
			p99 = append(p99, XY{float64(p.Jobs), p.P99})
			offered = append(offered, XY{float64(p.Jobs), float64(p.Jobs)})
		}
		throughput.Series = append(throughput.Series, Series{Name: s, Points: run, Color: color})
		delay.Series = append(delay.Series,
			Series{Name: s + " p99", Points: p99, Color: color},
			Series{Name: s + " p50", Points: p50, Dashed: true, Color: color})
	}
	offered = slices.CompactFunc(slices.SortedFunc(slices.Values(offered), func(a, b XY) int { return cmp.Compare(a.X, b.X) }),
		func(a, b XY) bool { return a.X == b.X })
	throughput.Series = append(throughput.Series, Series{Name: "offered", Points: offered, Dashed: true, Color: "#999"})
	charts := map[string]Chart{"scale-throughput.svg": throughput, "scale-delay.svg": delay}
	if len(bursts) > 0 {
		charts["scale-burst.svg"] = BurstChart(bursts)
	}
	return charts
}

// BurstChart draws, against the slots of a burst (one per job), how long
// after the instant the burst's last slot started (the max over its
// instants, and dashed the median) for each setup — and binary, in a
// side-by-side run — with two points or more.
func BurstChart(points []Point) Chart {
	bySetup := map[string]map[int]Point{}
	for _, p := range points {
		setup := p.Setup
		if p.Every > 0 {
			setup = fmt.Sprintf("%s, every %d s", setup, p.Every)
		}
		if p.Binary != "" {
			setup = p.Binary + ": " + setup
		}
		if bySetup[setup] == nil {
			bySetup[setup] = map[int]Point{}
		}
		bySetup[setup][p.Jobs] = p
	}
	c := Chart{
		Title:  "Bursts: last start after the instant (dashed: median over instants)",
		XLabel: "slots due at each instant (jobs)",
		YLabel: "last start after the instant, ms",
		LogX:   true, LogY: true,
	}
	for _, s := range slices.Sorted(maps.Keys(bySetup)) {
		pts := slices.SortedFunc(maps.Values(bySetup[s]), func(a, b Point) int { return cmp.Compare(a.Jobs, b.Jobs) })
		if len(pts) < 2 {
			continue
		}
		color := palette[len(c.Series)/2%len(palette)]
		var last, median []XY
		for _, p := range pts {
			last = append(last, XY{float64(p.Jobs), p.LastMax})
			median = append(median, XY{float64(p.Jobs), p.LastMedian})
		}
		c.Series = append(c.Series,
			Series{Name: s + " max", Points: last, Color: color},
			Series{Name: s + " median", Points: median, Dashed: true, Color: color})
	}
	return c
}
