package scheduler

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"
)

// nineNames are a fleet's replica names as a deployment makes them.
func nineNames() []string {
	var names []string
	for i := range 9 {
		names = append(names, fmt.Sprintf("slotlock-7d9f4-%d", i))
	}
	return names
}

// rankSlots are 10,000 slots: 100 jobs × 100 consecutive seconds.
func rankSlots(each func(job string, t time.Time)) {
	for j := range 100 {
		for s := range 100 {
			each(fmt.Sprintf("job-%d", j), bubbleStart.Add(time.Duration(s)*time.Second))
		}
	}
}

// chiSquare is the statistic of counts against an even spread.
func chiSquare(counts map[string]int, names []string, total int) float64 {
	want := float64(total) / float64(len(names))
	x := 0.0
	for _, n := range names {
		d := float64(counts[n]) - want
		x += d * d / want
	}
	return x
}

// chi2Crit8 is the χ² quantile 0.999 at 8 degrees of freedom (nine
// replicas): an even spread exceeds it once in a thousand fixed draws.
const chi2Crit8 = 26.12

// The ranks spread the slots evenly over nine replicas: who is rank 0,
// and who does anything for a slot (a candidate or a due fallback), each
// about 1/9 and 4/9 of 10,000 slots (χ², fixed names and slots: the test
// is deterministic).
func TestSlotRanksSpreadEvenly(t *testing.T) {
	names := nineNames()
	first, busy := map[string]int{}, map[string]int{}
	total := 0
	rankSlots(func(job string, t time.Time) {
		r := rankedReplicas(job, t, names)
		first[r[0]]++
		for _, n := range r[:DefaultCandidates+dueFallbacks] {
			busy[n]++
		}
		total++
	})
	t.Logf("χ² rank 0 %.1f, busy %.1f", chiSquare(first, names, total),
		chiSquare(busy, names, 4*total)/(1-float64(DefaultCandidates+dueFallbacks)/float64(len(names))))
	if x := chiSquare(first, names, total); x > chi2Crit8 {
		t.Errorf("rank 0 spread unevenly: χ² %.1f > %.2f: %v", x, chi2Crit8, first)
	}
	// Each replica is busy for a slot with probability p = 4/9: its count
	// varies by n·p·(1-p), so the statistic over 4 × total draws divided
	// by 1-p is about χ² at 8 degrees of freedom.
	p := float64(DefaultCandidates+dueFallbacks) / float64(len(names))
	if x := chiSquare(busy, names, 4*total) / (1 - p); x > chi2Crit8 {
		t.Errorf("busy share spread unevenly: χ² %.1f > %.2f: %v", x, chi2Crit8, busy)
	}
}

// Ranks are rendezvous hashing: a replica leaving the view moves only the
// slots it was among the top k+F of, and the others keep their order;
// about (k+F)/N of the slots change hands (a join is the same, reversed).
func TestSlotRanksMoveOnlyTheLeaversShare(t *testing.T) {
	names := nineNames()
	gone := names[4]
	rest := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == gone })
	moved, total := 0, 0
	rankSlots(func(job string, ts time.Time) {
		before := rankedReplicas(job, ts, names)
		after := rankedReplicas(job, ts, rest)
		if want := slices.DeleteFunc(slices.Clone(before), func(n string) bool { return n == gone }); !slices.Equal(after, want) {
			t.Fatalf("%s %v: order of the others changed: %v, then %v", job, ts, before, after)
		}
		top := DefaultCandidates + dueFallbacks
		if !slices.Equal(before[:top], after[:top]) {
			moved++
			if !slices.Contains(before[:top], gone) {
				t.Fatalf("%s %v: slot moved though %s was not among %v", job, ts, gone, before[:top])
			}
		}
		total++
	})
	t.Logf("%d of %d slots moved", moved, total)
	if share := float64(moved) / float64(total); share < 0.40 || share > 0.49 {
		t.Errorf("%.3f of the slots moved, want about 4/9", share)
	}
}

// Nine fleets with the same view agree on every slot's ranks (one of
// each, as rankedReplicas orders them), and their roles: k candidates, F
// fallbacks, the rest idle. Ranking a slot allocates nothing.
func TestSlotRanksAgreeAcrossReplicas(t *testing.T) {
	names := nineNames()
	locker := newEnv(t).locker
	var fleets []*fleet
	for _, n := range names {
		f := newFleet(testEngine(t, Config{Replica: n, Locker: locker}))
		f.viewSource = func() []string { return names }
		f.refreshView()
		fleets = append(fleets, f)
	}
	for s := range 200 {
		slot := bubbleStart.Add(time.Duration(s) * time.Second)
		order := rankedReplicas("tick", slot, names)
		roles := map[slotRole]int{}
		for _, f := range fleets {
			if r := f.slotRank("tick", slot); order[r] != f.cfg.Replica {
				t.Fatalf("slot %v: %s has rank %d, the order is %v", slot, f.cfg.Replica, r, order)
			}
			_, role := f.slotDelay("tick", slot)
			roles[role]++
		}
		want := map[slotRole]int{roleCandidate: 1, roleSecond: DefaultCandidates - 1, roleFallback: dueFallbacks, roleIdle: 9 - DefaultCandidates - dueFallbacks}
		if !maps.Equal(roles, want) {
			t.Fatalf("slot %v: roles %v, want %v", slot, roles, want)
		}
	}
	if a := testing.AllocsPerRun(100, func() { fleets[0].slotDelay("tick", bubbleStart) }); a != 0 {
		t.Errorf("ranking a slot allocates %v times", a)
	}
}
