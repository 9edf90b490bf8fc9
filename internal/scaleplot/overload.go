package scaleplot

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// A side-by-side run (TestScale -scale.base REV) prints, for each binary,
// a scale table under a line naming it ("base ee68862:", "new:"), and in
// ceiling mode an overload table whose columns come in a group per binary
// ("base ee68862: jobs", "slots run / s", "share of its ceiling's",
// "p99"). The overload chart reads both.

// Measured is one binary's slots run per second at one job count.
type Measured struct {
	Binary  string // "base ee68862", "new"
	Setup   string // "3 × 3 forbid"
	Jobs    int
	RunPerS float64
}

// ParseSideBySide reads every binary's points from a side-by-side run's
// output: the labelled scale tables and the overload tables. Points not
// measured (a 0-job row of an overload table) are left out.
func ParseSideBySide(r io.Reader) ([]Measured, error) {
	var (
		out   []Measured
		label string // the "name:" line just above the table, if any
		scale map[string]int
		over  []overloadGroup
		setup string
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		cells, ok := row(text)
		switch {
		case !ok:
			if scale != nil || over != nil || text != "" {
				label = "" // a name is the next table's only
			}
			if name, named := strings.CutSuffix(text, ":"); named {
				label = name
			}
			scale, over = nil, nil
		case scale == nil && over == nil:
			scale, over, setup = header(cells), overloadHeader(cells), cells[0]
		case strings.HasPrefix(cells[0], "---"):
		case len(scale) > 0 && label != "":
			p, err := point(cells, scale)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
			out = append(out, Measured{Binary: label, Setup: p.Setup, Jobs: p.Jobs, RunPerS: p.RunPerS})
		case len(over) > 0:
			ms, err := overloadRow(cells, over, setup)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
			out = append(out, ms...)
		}
	}
	return out, sc.Err()
}

// overloadGroup is one binary's columns in an overload table.
type overloadGroup struct {
	binary    string
	jobs, run int // cell positions
}

// overloadHeader finds the "<binary>: jobs" columns, each followed by its
// "slots run / s"; none: not an overload table.
func overloadHeader(cells []string) []overloadGroup {
	var gs []overloadGroup
	for i, c := range cells {
		if name, ok := strings.CutSuffix(c, ": jobs"); ok && i+1 < len(cells) && cells[i+1] == "slots run / s" {
			gs = append(gs, overloadGroup{binary: name, jobs: i, run: i + 1})
		}
	}
	return gs
}

func overloadRow(cells []string, gs []overloadGroup, setup string) ([]Measured, error) {
	var out []Measured
	for _, g := range gs {
		if g.run >= len(cells) {
			return nil, fmt.Errorf("%d cells, want %d", len(cells), g.run+1)
		}
		jobs, err := number(cells[g.jobs])
		if err != nil {
			return nil, fmt.Errorf("%s jobs: %w", g.binary, err)
		}
		run, err := number(cells[g.run])
		if err != nil {
			return nil, fmt.Errorf("%s slots run / s: %w", g.binary, err)
		}
		if jobs > 0 {
			out = append(out, Measured{Binary: g.binary, Setup: setup, Jobs: int(jobs), RunPerS: run})
		}
	}
	return out, nil
}

// OverloadChart draws slots run per second against jobs offered for each
// binary of one setup: the mean of the runs at each job count, and the
// offered rate, dashed.
func OverloadChart(ms []Measured, setup string) Chart {
	byBinary := map[string]map[int][]float64{}
	for _, m := range ms {
		if m.Setup != setup {
			continue
		}
		if byBinary[m.Binary] == nil {
			byBinary[m.Binary] = map[int][]float64{}
		}
		byBinary[m.Binary][m.Jobs] = append(byBinary[m.Binary][m.Jobs], m.RunPerS)
	}
	c := Chart{
		Title:  fmt.Sprintf("Past the ceiling: slots run per second against slots due (%s)", setup),
		XLabel: "every-second jobs offered (slots due per second)",
		YLabel: "slots run per second",
	}
	offered := map[int]bool{}
	for i, b := range slices.Sorted(maps.Keys(byBinary)) {
		var pts []XY
		for _, jobs := range slices.Sorted(maps.Keys(byBinary[b])) {
			runs := byBinary[b][jobs]
			sum := 0.0
			for _, r := range runs {
				sum += r
			}
			pts = append(pts, XY{float64(jobs), sum / float64(len(runs))})
			offered[jobs] = true
		}
		c.Series = append(c.Series, Series{Name: b, Points: pts, Color: palette[i%len(palette)]})
	}
	var line []XY
	for _, jobs := range slices.SortedFunc(maps.Keys(offered), cmp.Compare) {
		line = append(line, XY{float64(jobs), float64(jobs)})
	}
	c.Series = append(c.Series, Series{Name: "offered", Points: line, Dashed: true, Color: "#999"})
	return c
}
