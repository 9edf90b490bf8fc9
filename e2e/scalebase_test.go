//go:build linux

package e2e

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Side by side: -scale.base builds a second slotlock from a git revision
// and measures every point with both binaries, interleaved (base, new,
// base, new …) so that the host's drift falls on both; -scale.ceiling
// searches, for each binary in lockstep, the highest job count at which
// no slot is shed. Goals are ratios of the two, measured in one sitting.

var (
	scaleBase     = flag.String("scale.base", "", "scale: also build this git revision's slotlock and run every point with both, interleaved, printing new ÷ base")
	scaleRounds   = flag.Int("scale.rounds", 1, "scale: with -scale.base, base/new pairs per point (the figures are the pairs' means)")
	scaleCeiling  = flag.Bool("scale.ceiling", false, "scale: instead of -scale.jobs, search the highest job count with nothing shed (for both binaries with -scale.base)")
	scaleCeilFrom = flag.Int("scale.ceiling.from", 500, "scale: the ceiling search's first job count")
	scaleCeilMax  = flag.Int("scale.ceiling.max", 30000, "scale: the ceiling search's largest job count")
)

// scaleBin is a binary under measurement and its label in the tables.
type scaleBin struct {
	label string
	bin   Binaries
}

// scaleBins is the binaries to measure: this tree's, and the base
// revision's first when -scale.base is set.
func scaleBins(t *testing.T) []scaleBin {
	cur := scaleBin{label: "new", bin: bins}
	if *scaleBase == "" {
		return []scaleBin{cur}
	}
	b, err := buildRevision(t.TempDir(), *scaleBase)
	if err != nil {
		t.Fatalf("scale: -scale.base %s: %v", *scaleBase, err)
	}
	base := bins
	base.Slotlock = b
	return []scaleBin{{label: "base " + *scaleBase, bin: base}, cur}
}

// buildRevision exports rev of the repository (git archive: no worktree
// left behind) into dir and builds its cmd/slotlock there.
func buildRevision(dir, rev string) (string, error) {
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	archive := exec.Command("sh", "-c", `git -C .. archive "$1" | tar -x -C "$2"`, "sh", rev, src)
	if out, err := archive.CombinedOutput(); err != nil {
		return "", fmt.Errorf("git archive: %v\n%s", err, strings.TrimSpace(string(out)))
	}
	out := filepath.Join(dir, "slotlock")
	build := exec.Command("go", "build", "-o", out, "./cmd/slotlock")
	build.Dir = src
	if b, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, strings.TrimSpace(string(b)))
	}
	return out, nil
}

// scaleFigures are the figures compared between binaries at one point.
type scaleFigures struct {
	runPerSec, p99, cpu, redisCPU, cmds, rss, logBytes, unreachable float64
	// With bursts: the start delay's p50, the share of slots shed and
	// the last start after the instant (max, and median over instants).
	p50, shed, lastMax, lastMedian float64
}

func figuresOf(r ScaleResult) scaleFigures {
	slots := float64(r.Tally.Slots)
	per := func(x float64) float64 {
		if slots == 0 {
			return 0
		}
		return x / slots
	}
	_, all := r.callsPerNode()
	b := r.Tally.Bursts()
	return scaleFigures{
		p50:         b.P50,
		shed:        b.Shed(),
		lastMax:     b.LastMax,
		lastMedian:  b.LastMedian,
		runPerSec:   slots / r.Tally.To.Sub(r.Tally.From).Seconds(),
		p99:         r.Tally.Percentile(99),
		cpu:         per(float64(r.End.ReplicaCPU - r.Start.ReplicaCPU)),
		redisCPU:    per(float64(r.End.RedisCPU - r.Start.RedisCPU)),
		cmds:        per(all),
		rss:         float64(r.RSS),
		logBytes:    per(float64(r.End.LogBytes - r.Start.LogBytes)),
		unreachable: float64(r.Tally.Unreachable),
	}
}

// meanFigures averages the figures of several runs of one point.
func meanFigures(rs []ScaleResult) scaleFigures {
	var m scaleFigures
	for _, r := range rs {
		f := figuresOf(r)
		m.runPerSec += f.runPerSec
		m.p99 += f.p99
		m.cpu += f.cpu
		m.redisCPU += f.redisCPU
		m.cmds += f.cmds
		m.rss += f.rss
		m.logBytes += f.logBytes
		m.unreachable += f.unreachable
		m.p50 += f.p50
		m.shed += f.shed
		m.lastMax += f.lastMax
		m.lastMedian += f.lastMedian
	}
	n := float64(max(len(rs), 1))
	return scaleFigures{m.runPerSec / n, m.p99 / n, m.cpu / n, m.redisCPU / n, m.cmds / n, m.rss / n, m.logBytes / n, m.unreachable / n,
		m.p50 / n, m.shed / n, m.lastMax / n, m.lastMedian / n}
}

// CompareHeader is the side-by-side table's header: each cell holds
// "base → new (new ÷ base)".
const CompareHeader = "| point | slots run / s | start delay p99 | CPU per slot, replicas summed | Redis CPU per slot, nodes summed | " +
	"all commands per slot per node | RSS per replica | log bytes per slot | node unreachable warnings |\n" +
	"|---|---|---|---|---|---|---|---|---|"

// compareBurstHeader is the columns the side-by-side table gains with
// bursts.
const compareBurstHeader = "start delay p50 | shed | last start after the instant, max | last start, median over instants"

// compareHeaderFor is CompareHeader, with the burst columns when every
// is above 1.
func compareHeaderFor(every int) string {
	if every <= 1 {
		return CompareHeader
	}
	head, rule, _ := strings.Cut(CompareHeader, "\n")
	return head + " " + compareBurstHeader + " |\n" + rule + strings.Repeat("---|", strings.Count(compareBurstHeader, "|")+1)
}

// CompareRow renders one point's base and new figures and their ratios.
func CompareRow(p ScalePoint, base, cur scaleFigures) string {
	cell := func(b, n float64, f func(float64) string) string {
		ratio := "–"
		if b > 0 {
			ratio = fmt.Sprintf("×%.2f", n/b)
		}
		return fmt.Sprintf("%s → %s (%s)", f(b), f(n), ratio)
	}
	num := func(x float64) string { return thousands(int(x + 0.5)) }
	ms := func(x float64) string { return fmt.Sprintf("%.0f ms", x) }
	dur := func(x float64) string { return cpuPer(time.Duration(x)) }
	mb := func(x float64) string { return mib(int64(x)) }
	dec := func(x float64) string { return fmt.Sprintf("%.1f", x) }
	cells := []string{p.String(), cell(base.runPerSec, cur.runPerSec, num), cell(base.p99, cur.p99, ms),
		cell(base.cpu, cur.cpu, dur), cell(base.redisCPU, cur.redisCPU, dur), cell(base.cmds, cur.cmds, dec),
		cell(base.rss, cur.rss, mb), cell(base.logBytes, cur.logBytes, num), cell(base.unreachable, cur.unreachable, num)}
	if p.every() > 1 {
		pct := func(x float64) string { return fmt.Sprintf("%.1f %%", 100*x) }
		cells = append(cells, cell(base.p50, cur.p50, ms), cell(base.shed, cur.shed, pct),
			cell(base.lastMax, cur.lastMax, ms), cell(base.lastMedian, cur.lastMedian, ms))
	}
	return "| " + strings.Join(cells, " | ") + " |"
}

// ceilingSearch is one binary's search for the highest job count at
// which no slot of the window is shed: ×1.5 steps up to the first count
// that sheds, then halving the gap down to a tenth of the good count.
type ceilingSearch struct {
	good, bad, next int
	goodRate        float64 // slots run per second at good
}

func newCeilingSearch(from int) *ceilingSearch { return &ceilingSearch{next: from} }

// done reports whether the search has its answer (good).
func (c *ceilingSearch) done() bool { return c.next == 0 }

// record takes the result of measuring c.next and picks the next count.
func (c *ceilingSearch) record(shed bool, limit int) {
	n := c.next
	if shed {
		c.bad = n
	} else {
		c.good = n
	}
	switch {
	case c.bad == 0 && n >= limit:
		c.next = 0 // nothing shed up to the limit
	case c.bad == 0:
		c.next = min(roundJobs(n*3/2), limit)
	case c.good == 0 && c.bad <= 100:
		c.next = 0
	case c.good == 0:
		c.next = roundJobs(c.bad / 2)
	case c.bad-c.good <= max(c.good/10, 100):
		c.next = 0
	default:
		c.next = roundJobs((c.good + c.bad) / 2)
	}
}

// roundJobs rounds a job count to a multiple of 100 (at least 100).
func roundJobs(n int) int { return max(100, (n+50)/100*100) }

// TestCeilingSearch: the search steps ×1.5 to the first count that sheds,
// then halves the gap down to a tenth of the good count; it stops at the
// limit when nothing sheds, and below the first count when that sheds.
func TestCeilingSearch(t *testing.T) {
	run := func(from, ceiling, limit int) (good, bad int, tried []int) {
		c := newCeilingSearch(from)
		for !c.done() {
			tried = append(tried, c.next)
			c.record(c.next > ceiling, limit)
		}
		return c.good, c.bad, tried
	}
	good, bad, tried := run(500, 2300, 30000)
	if good != 2300 || bad != 2500 || fmt.Sprint(tried) != "[500 800 1200 1800 2700 2300 2500]" {
		t.Errorf("ceiling 2300: good %d bad %d tried %v", good, bad, tried)
	}
	if good, bad, _ := run(500, 1e9, 3000); good != 3000 || bad != 0 {
		t.Errorf("no ceiling below the limit: good %d bad %d", good, bad)
	}
	if good, bad, _ := run(500, 250, 30000); good != 200 || bad != 300 {
		t.Errorf("ceiling below the first count: good %d bad %d", good, bad)
	}
}
