package scaleplot

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// Point is one row of a scale table: what the charts need of it.
type Point struct {
	Jobs     int     // every-second jobs offered
	Setup    string  // "3 × 3 forbid": replicas × nodes and overlap
	RunPerS  float64 // slots run per second
	P50, P99 float64 // start delay, milliseconds
	// Burst is set for a table of bursts (TestScale -scale.every N): its
	// jobs' slots all fall on the same instants, and LastMax and
	// LastMedian are the last start after the instant, milliseconds.
	Burst               bool
	LastMax, LastMedian float64
	Every               int // the burst period in seconds, from the line above the table; 0: not said
	// Binary is the name of a side-by-side run's binary ("base 88f3cb8",
	// "new") from the "name:" line just above the table; "" when unnamed.
	Binary string
}

// everyLine finds the burst period in the line TestScale writes above a
// table of bursts ("bursts: every job `*/10 * * * * *`, …").
var everyLine = regexp.MustCompile("bursts: every job `\\*/(\\d+) ")

// lastColumn is the burst table's column of the last start after the
// instant.
const lastColumn = "last start after the instant, max (median)"

// columns are the headers a table must have (others are ignored).
var columns = []string{"jobs", "replicas × nodes", "overlap", "slots run / s", "start delay p50 / p99"}

// Parse reads every scale table in r.
func Parse(r io.Reader) ([]Point, error) {
	var (
		pts   []Point
		idx   map[string]int
		every int
		label string // the "name:" line just above the table, if any
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		cells, ok := row(text)
		switch {
		case !ok:
			if idx != nil || text != "" {
				label = "" // a name is the next table's only
			}
			if name, named := strings.CutSuffix(text, ":"); named {
				label = name
			}
			idx = nil
			if m := everyLine.FindStringSubmatch(text); m != nil {
				every, _ = strconv.Atoi(m[1])
			}
		case idx == nil:
			idx = header(cells)
		case len(idx) == 0 || strings.HasPrefix(cells[0], "---"):
			// a table the charts do not read, or the header's rule
		default:
			p, err := point(cells, idx)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", line, err)
			}
			if p.Burst {
				p.Every = every
			}
			p.Binary = label
			pts = append(pts, p)
		}
	}
	return pts, sc.Err()
}

// row splits a markdown table row into trimmed cells.
func row(s string) ([]string, bool) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "|") || !strings.HasSuffix(s, "|") {
		return nil, false
	}
	cells := strings.Split(s[1:len(s)-1], "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells, true
}

// header maps the wanted column names to their positions, or returns an
// empty map (a table the charts do not read: its rows are skipped).
func header(cells []string) map[string]int {
	idx := map[string]int{}
	for i, c := range cells {
		idx[c] = i
	}
	for _, c := range columns {
		if _, ok := idx[c]; !ok {
			return map[string]int{}
		}
	}
	return idx
}

func point(cells []string, idx map[string]int) (Point, error) {
	if len(cells) < len(idx) {
		return Point{}, fmt.Errorf("%d cells, want at least %d", len(cells), len(idx))
	}
	cell := func(name string) string { return cells[idx[name]] }
	jobs, err := number(cell("jobs"))
	if err != nil {
		return Point{}, fmt.Errorf("jobs: %w", err)
	}
	run, err := number(cell("slots run / s"))
	if err != nil {
		return Point{}, fmt.Errorf("slots run / s: %w", err)
	}
	p50, p99, err := delays(cell("start delay p50 / p99"))
	if err != nil {
		return Point{}, err
	}
	p := Point{
		Jobs:    int(jobs),
		Setup:   cell("replicas × nodes") + " " + cell("overlap"),
		RunPerS: run,
		P50:     p50,
		P99:     p99,
	}
	if i, ok := idx[lastColumn]; ok && i < len(cells) {
		p.Burst = true
		if p.LastMax, p.LastMedian, err = lastStart(cells[i]); err != nil {
			return Point{}, err
		}
	}
	return p, nil
}

var lastCell = regexp.MustCompile(`^([\d.]+) (ms|s) \(([\d.]+) (ms|s)\)`)

// lastStart reads "1.20 s (800 ms)", and what follows it (a note on
// instants where nothing started), as milliseconds.
func lastStart(s string) (maxMs, medianMs float64, err error) {
	m := lastCell.FindStringSubmatch(s)
	if m == nil {
		return 0, 0, fmt.Errorf("last start %q: want \"MAX ms (MEDIAN ms)\"", s)
	}
	return millis(m[1], m[2]), millis(m[3], m[4]), nil
}

func millis(v, unit string) float64 {
	f, _ := strconv.ParseFloat(v, 64)
	if unit == "s" {
		return f * 1000
	}
	return f
}

// number reads "5,000" or "4.19".
func number(s string) (float64, error) {
	return strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
}

var delayCell = regexp.MustCompile(`^([\d.]+) / ([\d.]+) (ms|s)$`)

// delays reads "61 / 161 ms" or "1.6 / 3.1 s" as milliseconds.
func delays(s string) (p50, p99 float64, err error) {
	m := delayCell.FindStringSubmatch(s)
	if m == nil {
		return 0, 0, fmt.Errorf("start delay %q: want \"P50 / P99 ms\" or \"P50 / P99 s\"", s)
	}
	unit := 1.0
	if m[3] == "s" {
		unit = 1000
	}
	a, _ := strconv.ParseFloat(m[1], 64)
	b, _ := strconv.ParseFloat(m[2], 64)
	return a * unit, b * unit, nil
}
