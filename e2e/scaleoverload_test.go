//go:build linux

package e2e

import (
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The overload curve: with -scale.ceiling and -scale.overload, each
// binary, once its ceiling is known, runs at multiples of it (1×, 1.5×,
// 2×, 3× by default), interleaved with the other binary, and the table
// gives the slots run per second as a share of what it ran at its
// ceiling. A scheduler that does not collapse keeps that share near 1
// however far past its ceiling it is offered work.

var scaleOverload = flag.String("scale.overload", "", "scale: with -scale.ceiling, also run each binary at these multiples of its ceiling, e.g. 1,1.5,2,3")

// overloadFactors parses -scale.overload.
func overloadFactors(s string) ([]float64, error) {
	if s == "" {
		return nil, nil
	}
	var out []float64
	for _, f := range strings.Split(s, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || x <= 0 || math.IsInf(x, 0) {
			return nil, fmt.Errorf("scale: -scale.overload %q: want positive multiples, e.g. 1,1.5,2,3", s)
		}
		out = append(out, x)
	}
	return out, nil
}

// overloadPoint is one binary's run at a multiple of its ceiling.
type overloadPoint struct {
	jobs      int
	runPerSec float64
	shed      int
	p99       float64
}

// scaleOverloads runs point p (its job count ignored) at each factor of
// each binary's ceiling and returns the overload table; ceilings[i] is
// binary i's ceiling and atCeiling[i] the slots it ran per second there.
func scaleOverloads(t *testing.T, sbs []scaleBin, p ScalePoint, factors []float64, ceilings []int, atCeiling []float64) string {
	rows := make([][]overloadPoint, len(factors))
	for fi, f := range factors {
		rows[fi] = make([]overloadPoint, len(sbs))
		for i, sb := range sbs {
			q := p
			q.Jobs = roundJobs(int(float64(ceilings[i]) * f))
			t.Run(fmt.Sprintf("overload/%s/x%g/%s", q, f, strings.ReplaceAll(sb.label, " ", "_")), func(t *testing.T) {
				res := runScalePointWith(t, sb.bin, q, time.Duration(*scaleWarmup)*time.Second, *scaleSeconds, nil)
				t.Logf("%s\n%s\n%s", sb.label, res.Header(), res.Row())
				t.Logf("commands per slot per node: %s", res.CommandMix())
				fig := figuresOf(res)
				rows[fi][i] = overloadPoint{jobs: q.Jobs, runPerSec: fig.runPerSec, shed: res.Tally.Missed(), p99: fig.p99}
			})
		}
	}
	return overloadTable(sbs, p, factors, rows, atCeiling)
}

// overloadTable renders the overload runs: per factor and binary, the
// jobs offered, the slots run per second and their share of the
// binary's own rate at its ceiling.
func overloadTable(sbs []scaleBin, p ScalePoint, factors []float64, rows [][]overloadPoint, atCeiling []float64) string {
	head := "| " + fmt.Sprintf("%d × %d %s", p.Replicas, p.Nodes, p.Overlap) + " |"
	sep := "|---|"
	for _, sb := range sbs {
		head += " " + sb.label + ": jobs | slots run / s | share of its ceiling's | p99 |"
		sep += "---|---|---|---|"
	}
	lines := []string{head, sep}
	for fi, f := range factors {
		line := fmt.Sprintf("| %g× the ceiling |", f)
		for i, o := range rows[fi] {
			share := "–"
			if atCeiling[i] > 0 {
				share = fmt.Sprintf("%.2f", o.runPerSec/atCeiling[i])
			}
			line += fmt.Sprintf(" %s | %s | %s | %.0f ms |", thousands(o.jobs), thousands(int(o.runPerSec+0.5)), share, o.p99)
		}
		lines = append(lines, line)
	}
	return "overload: each binary offered multiples of its own ceiling; slots run per second as a share of its rate at the ceiling (goal ≥ 0.9)\n\n" +
		strings.Join(lines, "\n")
}

// TestOverloadFactors: the flag parses to its multiples and refuses
// what is not a positive number.
func TestOverloadFactors(t *testing.T) {
	got, err := overloadFactors("1, 1.5,2,3")
	if err != nil || fmt.Sprint(got) != "[1 1.5 2 3]" {
		t.Errorf("overloadFactors: %v %v", got, err)
	}
	for _, bad := range []string{"0", "-1", "x", "1,,2", "Inf"} {
		if _, err := overloadFactors(bad); err == nil {
			t.Errorf("overloadFactors(%q): no error", bad)
		}
	}
	if got, err := overloadFactors(""); err != nil || got != nil {
		t.Errorf("overloadFactors(\"\"): %v %v", got, err)
	}
}
