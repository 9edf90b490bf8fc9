package scaleplot

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "redraw docs/images/*.svg from docs/data/*.md")

const (
	dataDir   = "../../docs/data"
	imagesDir = "../../docs/images"
)

// The charts on the performance page are what the newest sitting's data
// files give (scale-DATE-*.md of the latest DATE): points of one sitting,
// one revision and one state of the host, never mixed with older ones.
func TestChartsMatchTheData(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(dataDir, "scale-*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no scale data under docs/data")
	newest := ""
	for _, f := range files {
		newest = max(newest, sitting(filepath.Base(f)))
	}
	points := parseData(t, "scale-"+newest+"-*.md", Parse)
	for name, chart := range Charts(points) {
		golden(t, name, chart.SVG())
	}
}

// The burst chart is what the newest sitting of bursts gives: the last
// of the files burst-DATE-N.md by name (a sitting a file; N orders the
// sittings of a day), each binary of its side-by-side run a line.
func TestBurstChartMatchesTheData(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(dataDir, "burst-*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no burst data under docs/data")
	chart := BurstChart(parseData(t, filepath.Base(slices.Max(files)), Parse))
	require.NotEmpty(t, chart.Series, "no setup with two burst sizes")
	golden(t, "scale-burst.svg", chart.SVG())
}

// sitting is the date in a data file's name: 2026-12-02 of
// scale-2026-12-02-latest.md.
func sitting(name string) string {
	date := strings.TrimPrefix(name, "scale-")
	return date[:min(len(date), len("2006-01-02"))]
}

// parseData parses every file of docs/data matching pattern, each with at
// least one point.
func parseData[T any](t *testing.T, pattern string, parse func(io.Reader) ([]T, error)) []T {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dataDir, pattern))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no %s under docs/data", pattern)
	var all []T
	for _, f := range files {
		fh, err := os.Open(f)
		require.NoError(t, err)
		got, err := parse(fh)
		fh.Close()
		require.NoError(t, err, f)
		require.NotEmpty(t, got, "%s has no table the charts read", f)
		all = append(all, got...)
	}
	return all
}

// golden compares docs/images/name with want, or writes it (-update).
func golden(t *testing.T, name, want string) {
	t.Helper()
	path := filepath.Join(imagesDir, name)
	if *update {
		require.NoError(t, os.MkdirAll(imagesDir, 0o755))
		require.NoError(t, os.WriteFile(path, []byte(want), 0o644))
		return
	}
	got, err := os.ReadFile(path)
	require.NoError(t, err, "run go test ./internal/scaleplot -update")
	require.Equal(t, want, string(got), "%s is stale: run go test ./internal/scaleplot -update", path)
}

func TestParse(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []Point
		err  string
	}{
		{
			name: "a scale table with extra columns",
			in: "host: x\n\n| jobs | replicas × nodes | overlap | slots run / s | every slot once | start delay p50 / p99 | more |\n" +
				"|---|---|---|---|---|---|---|\n" +
				"| 5,000 | 3 × 3 | forbid | 4,999 | no duplicate | 0.5 / 1.1 s | x |\n" +
				"| 100 | 1 × 1 | allow | 100 | yes | 10 / 25 ms | y |\n",
			want: []Point{
				{Jobs: 5000, Setup: "3 × 3 forbid", RunPerS: 4999, P50: 500, P99: 1100},
				{Jobs: 100, Setup: "1 × 1 allow", RunPerS: 100, P50: 10, P99: 25},
			},
		},
		{
			name: "another table is skipped",
			in:   "| step | x |\n|---|---|\n| before | 1 |\n",
		},
		{
			name: "a malformed delay names the line",
			in: "| jobs | replicas × nodes | overlap | slots run / s | start delay p50 / p99 |\n|---|---|---|---|---|\n" +
				"| 1 | 3 × 3 | forbid | 1 | fast |\n",
			err: "line 3: start delay \"fast\"",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(c.in))
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
}

// The overload chart is what the side-by-side runs' data give.
func TestOverloadChartMatchesTheData(t *testing.T) {
	chart := OverloadChart(parseData(t, "round*-*.md", ParseSideBySide), "3 × 3 forbid")
	require.GreaterOrEqual(t, len(chart.Series), 3, "want a line per binary and the offered rate")
	golden(t, "overload.svg", chart.SVG())
}

func TestParseSideBySide(t *testing.T) {
	in := "ceiling: x\n\n| point | base r1 | new |\n|---|---|---|\n| 3 × 3 forbid | 2,800 jobs | 2,800 jobs |\n\n" +
		"| 3 × 3 forbid | base r1: jobs | slots run / s | share of its ceiling's | p99 | new: jobs | slots run / s | share of its ceiling's | p99 |\n" +
		"|---|---|---|---|---|---|---|---|---|\n" +
		"| 1× the ceiling | 2,800 | 2,790 | 1.00 | 1098 ms | 2,800 | 2,800 | 1.00 | 578 ms |\n" +
		"| 2× the ceiling | 5,600 | 610 | 0.22 | 3991 ms | 0 | 0 | 0.00 | 0 ms |\n\n" +
		"base r1:\n\n| jobs | replicas × nodes | overlap | slots run / s | start delay p50 / p99 |\n|---|---|---|---|---|\n" +
		"| 4,200 | 3 × 3 | forbid | 1,208 | 1.8 / 4.0 s |\n\n" +
		"side by side:\n\n| point | slots run / s |\n|---|---|\n| jobs=4200 | 1 → 2 |\n\n" +
		"| jobs | replicas × nodes | overlap | slots run / s | start delay p50 / p99 |\n|---|---|---|---|---|\n" +
		"| 9 | 3 × 3 | forbid | 9 | 1 / 2 ms |\n"
	got, err := ParseSideBySide(strings.NewReader(in))
	require.NoError(t, err)
	require.Equal(t, []Measured{
		{Binary: "base r1", Setup: "3 × 3 forbid", Jobs: 2800, RunPerS: 2790},
		{Binary: "new", Setup: "3 × 3 forbid", Jobs: 2800, RunPerS: 2800},
		{Binary: "base r1", Setup: "3 × 3 forbid", Jobs: 5600, RunPerS: 610},
		{Binary: "base r1", Setup: "3 × 3 forbid", Jobs: 4200, RunPerS: 1208},
	}, got, "the 0-job cell is not a point; a table with no name above it is not a binary's")
}

// A table of bursts (-scale.every N) gives burst points, drawn on the
// burst chart alone: the last start after the instant against the slots
// of a burst, a line per setup.
func TestBurstChart(t *testing.T) {
	in := "host: x; bursts: every job `*/10 * * * * *`\n\n" +
		"| jobs | replicas × nodes | overlap | slots run / s | start delay p50 / p99 | slots due | run | shed | duplicates | last start after the instant, max (median) |\n" +
		"|---|---|---|---|---|---|---|---|---|---|\n" +
		"| 5,000 | 3 × 3 | forbid | 500 | 523 / 1400 ms | 15,000 | 15,000 | 0.0 % | 0 | 1.64 s (1.50 s) |\n" +
		"| 10,000 | 3 × 3 | forbid | 740 | 0.9 / 2.0 s | 30,000 | 22,200 | 26.0 % | 0 | 2.22 s (2.10 s); 1 of 3 instants started nothing |\n" +
		"| 1,000 | 3 × 3 | forbid | 100 | 50 / 180 ms | 3,000 | 3,000 | 0.0 % | 0 | 210 ms (190 ms) |\n"
	pts, err := Parse(strings.NewReader(in))
	require.NoError(t, err)
	require.Len(t, pts, 3)
	require.Equal(t, Point{Jobs: 10000, Setup: "3 × 3 forbid", RunPerS: 740, P50: 900, P99: 2000,
		Burst: true, LastMax: 2220, LastMedian: 2100, Every: 10}, pts[1])

	steady := Point{Jobs: 100, Setup: "3 × 3 forbid", RunPerS: 100, P50: 10, P99: 20}
	charts := Charts(append(pts, steady, Point{Jobs: 1000, Setup: steady.Setup, RunPerS: 1000, P50: 20, P99: 40}))
	require.Contains(t, charts, "scale-burst.svg")
	require.Len(t, charts["scale-delay.svg"].Series, 2, "burst points stay off the steady charts")
	burst := charts["scale-burst.svg"]
	require.Len(t, burst.Series, 2)
	require.Equal(t, "3 × 3 forbid, every 10 s max", burst.Series[0].Name)
	require.Equal(t, []XY{{1000, 210}, {5000, 1640}, {10000, 2220}}, burst.Series[0].Points)
	require.Equal(t, []XY{{1000, 190}, {5000, 1500}, {10000, 2100}}, burst.Series[1].Points)
	require.True(t, burst.Series[1].Dashed)
	require.Contains(t, burst.SVG(), "<polyline")
	require.NotContains(t, Charts([]Point{steady}), "scale-burst.svg", "no bursts: no burst chart")

	_, err = Parse(strings.NewReader(strings.Replace(in, "210 ms (190 ms)", "soon", 1)))
	require.ErrorContains(t, err, `line 7: last start "soon"`)
}
