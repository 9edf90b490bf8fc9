package scheduler_test

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/slotlock/slotlock/scheduler"
)

// Concurrency groups in the simulation: the fault plan's crashes, pauses
// past the lease, store faults and partitions, with three every-minute
// jobs in a group of two (and one outside it). The hourly checks add the
// group's invariant to the others: at no instant more than the limit of
// the group's runs active (their processes running them, pauses left
// out, as for the exclusive check), and a group_full skip accounts for a
// slot as its own outcome.

var simHeavy = &scheduler.Group{Name: "heavy", Limit: 2}

var groupJobs = []simJobDef{
	{"heavy-a", "0 * * * * *", scheduler.OverlapForbid, scheduler.Misfire{Policy: scheduler.MisfireSkip},
		[2]time.Duration{2 * time.Second, 40 * time.Second}, [2]time.Duration{time.Minute, 90 * time.Second}, 0, simHeavy},
	{"heavy-b", "0 * * * * *", scheduler.OverlapForbid, scheduler.Misfire{Policy: scheduler.MisfireRunOnce, Deadline: 5 * time.Minute},
		[2]time.Duration{2 * time.Second, 40 * time.Second}, [2]time.Duration{time.Minute, 90 * time.Second}, 0, simHeavy},
	{"heavy-c", "1 * * * * *", scheduler.OverlapAllow, scheduler.Misfire{Policy: scheduler.MisfireSkip},
		[2]time.Duration{5 * time.Second, 50 * time.Second}, [2]time.Duration{time.Minute, 2 * time.Minute}, 0, simHeavy},
	{"light", "30 * * * * *", scheduler.OverlapForbid, scheduler.Misfire{Policy: scheduler.MisfireSkip},
		[2]time.Duration{time.Second, 5 * time.Second}, [2]time.Duration{5 * time.Second, 20 * time.Second}, 0, nil},
}

func TestSimulationGroups(t *testing.T) {
	hours := time.Duration(*simHours / 8 * float64(time.Hour)) // 3 h by default
	for _, seed := range []uint64{315852, 171171} {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Parallel()
			simulate(t, simConfig{seed: seed, duration: hours, replicas: 3, stores: 3,
				ttl: simTTL(seed), skew: time.Second, faultGap: 90 * time.Second, jobs: groupJobs})
		})
	}
}

// groupExcuse reports whether a slot of d that did not run in a
// fault-free window is accounted for by its group: skipped group_full
// while the group's runs really held every permit (at least the limit of
// them going on between the due time and the lateness bound), or skipped
// for overlap while an attempt of a neighbouring slot held the job lease
// waiting for a permit (it was skipped group_full within the lateness
// bound of the slot).
func (w *world) groupExcuse(why string, d simJobDef, slot string, due time.Time, lateness time.Duration, runs []*runRec, audits []auditRec) bool {
	if d.group == nil {
		return false
	}
	switch why {
	case "group_full":
		inGroup := map[string]bool{}
		for _, j := range w.cfg.jobs {
			inGroup[j.name] = j.group == d.group
		}
		n := 0
		for _, r := range runs {
			if inGroup[r.job] && r.start.Before(due.Add(lateness)) && (r.end.IsZero() || r.end.After(due)) {
				n++
			}
		}
		return n >= d.group.Limit
	case "overlap":
		for _, a := range audits {
			if a.event == "slot.skipped" && a.reason == "group_full" && a.job == d.name && a.slot != slot &&
				!a.at.Before(due.Add(-lateness-500*time.Millisecond)) && !a.at.After(due.Add(lateness+time.Second)) {
				return true
			}
		}
	}
	return false
}

// groupOverLimit reports each group whose runs' active times put more
// than its limit at one instant within [from, to).
func (w *world) groupOverLimit(runs []*runRec, from, to time.Time) []string {
	type edge struct {
		at time.Time
		d  int
	}
	groupOf := map[string]*scheduler.Group{}
	for _, d := range w.cfg.jobs {
		if d.group != nil {
			groupOf[d.name] = d.group
		}
	}
	edges := map[*scheduler.Group][]edge{}
	for _, r := range runs {
		g := groupOf[r.job]
		if g == nil {
			continue
		}
		for _, s := range active(r) {
			if !s[1].After(from) || !s[0].Before(to) {
				continue
			}
			edges[g] = append(edges[g], edge{s[0], 1}, edge{s[1], -1})
		}
	}
	var out []string
	for g, es := range edges {
		sort.Slice(es, func(i, j int) bool {
			if es[i].at.Equal(es[j].at) {
				return es[i].d < es[j].d
			}
			return es[i].at.Before(es[j].at)
		})
		n := 0
		for _, e := range es {
			if n += e.d; n > g.Limit {
				out = append(out, fmt.Sprintf("group: %d runs of group %s (limit %d) active at %s", n, g.Name, g.Limit, e.at.Sub(w.start)))
				break
			}
		}
	}
	return out
}
