package scheduler_test

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/slotlock/slotlock/scheduler"
)

// The invariants, checked over the slots of a window of simulated time:
//
//   - once: no slot starts twice (the ledger of what the jobs saw);
//   - exclusive: runs of a forbid or replace job never overlap in time, a
//     paused process's time not counted (the contract's one exception: a
//     process frozen past its lease cannot stop its run while frozen);
//   - tokens: the fencing tokens of a job are unique, increase in start
//     order for forbid and replace jobs, and for any job exceed every token
//     of a run that started 10 s or more earlier;
//   - ran: every slot in a fault-free window ran, or, for a forbid job,
//     was skipped for overlap while a run of its job was going on (for a
//     job with jitter the windows are around the slot's due time); a
//     replace job's slot always runs there: the run going on is canceled;
//   - replaced: every replace cancellation or skip names a later slot of
//     its job (sim_replace_test.go);
//   - explained: every slot has an audit event that accounts for it;
//   - due: no slot starts before its due time (its jitter offset after
//     it), less the clock offsets;
//   - abandoned: run.abandoned only for a run that started (its run id
//     is in the ledger of that slot: never a phantom); a run whose process
//     died is reported exactly once — as abandoned, or, when it died
//     before it could confirm its start (within unconfirmedFor of it, or
//     in a window with faults that may have kept its renewals off the
//     stores), as slot.missed with may_have_started; no slot is reported
//     twice;
//   - missed: a slot is reported missed (slot.missed) at most once, never
//     when it started (but with may_have_started, for the run that the
//     report names, under the rule above), and never while the job was
//     surely paused;
//   - one outcome: no slot is reported both abandoned and missed;
//   - clocks: no clock.off or clock.node_off: every replica's clock is
//     within skew/2 of the stores', which keep one time, so a warning
//     would be a false alarm — a read's uncertainty must cover the
//     latencies, losses and pauses it met.

type slotKey struct{ job, slot string }

type checkStats struct {
	slots, runs, abandoned, overlapSkips, missed, replaced int
	mayHaveStarted                                         int // slot.missed with may_have_started
}

// unconfirmedFor bounds how long after its start a run may stop and still
// not have confirmed it (locking's confirmAfter, one renewal round trip
// and slack for a loaded simulated network).
const unconfirmedFor = 1500 * time.Millisecond

// couldNotConfirm reports whether run r may have stopped before it
// confirmed its start: its process died or froze within unconfirmedFor of
// the start, or a fault touched that time.
func (w *world) couldNotConfirm(r *runRec) bool {
	until := r.start.Add(unconfirmedFor)
	for t := r.start; !t.After(until); t = t.Add(50 * time.Millisecond) {
		if !r.inst.activeAt(t) {
			return true
		}
	}
	return !w.faults.quiet(r.start, until.Add(w.cfg.ttl))
}

// explainReasons are slot.skipped reasons that account for a slot that no
// replica ran (held and done point at another replica).
var explainReasons = map[string]bool{
	"overlap": true, "late": true, "no_quorum": true, "slow_lock": true, "shutdown": true, "claimed": true, "paused": true,
	"replaced": true, "group_full": true,
}

func (w *world) check(from, to time.Time) (viol []string, st checkStats) {
	// A snapshot: the jobs go on recording while an hourly check runs.
	w.rec.mu.Lock()
	runs := make([]*runRec, len(w.rec.runs))
	for i, r := range w.rec.runs {
		c := *r
		runs[i] = &c
	}
	audits := append([]auditRec(nil), w.rec.audits...)
	w.rec.mu.Unlock()

	bySlot := map[slotKey][]*runRec{}
	byJob := map[string][]*runRec{}
	for _, r := range runs {
		bySlot[slotKey{r.job, r.slot}] = append(bySlot[slotKey{r.job, r.slot}], r)
		byJob[r.job] = append(byJob[r.job], r)
	}
	explained := map[slotKey]string{}
	abandoned := map[slotKey][]auditRec{}
	abandonedRun := map[string]int{}
	unconfirmedRun := map[string]int{} // slot.missed may_have_started, by the run it names
	missed := map[slotKey][]auditRec{}
	type lateRange struct{ first, last string }
	lates := map[string][]lateRange{}
	for _, a := range audits {
		k := slotKey{a.job, a.slot}
		switch {
		case a.event == "run.abandoned":
			abandoned[k] = append(abandoned[k], a)
			abandonedRun[a.runID]++
			explained[k] = "abandoned"
		case a.event == "slot.missed":
			missed[k] = append(missed[k], a)
			explained[k] = "missed"
			if a.mayHaveStarted {
				unconfirmedRun[a.runID]++
			}
		case a.event == "slot.skipped" && explainReasons[a.reason]:
			explained[k] = a.reason
			if a.reason == "late" {
				first := a.slot
				if a.firstSlot != "" {
					first = a.firstSlot
				}
				lates[a.job] = append(lates[a.job], lateRange{first, a.slot})
			}
		}
	}
	lateness := w.cfg.skew + time.Second
	bad := func(format string, args ...any) { viol = append(viol, fmt.Sprintf(format, args...)) }
	for _, a := range audits {
		if (a.event == "clock.off" || a.event == "clock.node_off") && !a.at.Before(from) && a.at.Before(to) {
			bad("clocks: %s logged %s at %s, its clock within skew/2 of the stores'", a.inst.name, a.event, a.at.Sub(w.start))
		}
	}

	for _, d := range w.cfg.jobs {
		sched, _ := scheduler.ParseSchedule(d.spec, time.UTC)
		for s := sched.Next(from.Add(-time.Nanosecond)); s.Before(to); s = sched.Next(s) {
			k := slotKey{d.name, s.UTC().Format(time.RFC3339)}
			st.slots++
			rs := bySlot[k]
			st.runs += len(rs)
			if len(rs) > 1 {
				bad("once: %s %s started %d times (%s)%s", k.job, k.slot, len(rs), describeRuns(rs), w.trace(audits, k.job, k.slot))
			}
			if len(abandoned[k]) > 1 {
				var who []string
				for _, a := range abandoned[k] {
					who = append(who, fmt.Sprintf("%s(%s) at %s run %s", a.replica, a.inst.name, a.at.Sub(w.start), a.runID))
				}
				bad("abandoned: %s %s reported %d times: %v", k.job, k.slot, len(abandoned[k]), who)
			}
			st.abandoned += len(abandoned[k])
			for _, a := range abandoned[k] {
				if !slices.ContainsFunc(rs, func(r *runRec) bool { return r.runID == a.runID }) {
					bad("abandoned: %s %s reported abandoned (run %s on %s) but that run never started (%s)%s", k.job, k.slot,
						a.runID, a.holder, describeRuns(rs), w.trace(audits, k.job, k.slot))
				}
			}
			if len(abandoned[k]) > 0 && len(missed[k]) > 0 && !w.backfillOfMissed(k, abandoned[k], missed[k], rs) {
				bad("one outcome: %s %s reported both abandoned and missed%s", k.job, k.slot, w.trace(audits, k.job, k.slot))
			}
			why := explained[k]
			if why == "overlap" {
				st.overlapSkips++
			}
			if len(rs) == 0 && why == "" {
				for _, lr := range lates[d.name] {
					if lr.first <= k.slot && k.slot <= lr.last {
						why = "late"
					}
				}
			}
			if len(rs) == 0 && why == "" {
				bad("explained: %s %s has no run and no audit event accounting for it%s", k.job, k.slot, w.trace(audits, k.job, k.slot))
			}
			// When the replicas fire the slot: its due time.
			due := s.Add(scheduler.JitterOffset(d.name, s, d.jitter))
			for _, r := range rs {
				if r.start.Before(due.Add(-w.cfg.skew / 2)) {
					bad("due: %s %s started at %s, before its due time %s", k.job, k.slot,
						r.start.Format(time.RFC3339Nano), due.Format(time.RFC3339Nano))
				}
			}
			pause := w.pausedAt(d.name, due, lateness)
			if pause == pausedSurely && len(rs) > 0 {
				bad("paused: %s %s started while the job was paused (%s; pause writes: %s)%s", k.job, k.slot, describeRuns(rs),
					w.pausesNear(d.name, due), w.trace(audits, k.job, k.slot))
			}
			if m := missed[k]; len(m) > 0 {
				st.missed++
				for _, v := range w.checkMissed(k, m, rs, pause == pausedSurely) {
					bad("%s%s", v, w.trace(audits, k.job, k.slot))
				}
				for _, a := range m {
					if a.mayHaveStarted {
						st.mayHaveStarted++
					}
				}
			}
			if len(rs) == 0 && pause == notPaused && w.faults.quiet(due.Add(-2*w.cfg.ttl-lateness), due.Add(w.cfg.ttl+lateness+time.Second)) {
				busy := false
				var around []*runRec
				for _, r := range byJob[d.name] {
					if r.start.Before(due.Add(lateness+time.Second)) && (r.end.IsZero() || r.end.After(due.Add(-lateness))) {
						busy = true
						if !r.end.IsZero() || r.start.After(due.Add(-time.Hour)) {
							around = append(around, r)
						}
					}
				}
				if (why != "overlap" || !busy || d.overlap == scheduler.OverlapReplace) &&
					!w.groupExcuse(why, d, k.slot, due, lateness, runs, audits) {
					tr := w.trace(audits, k.job, k.slot)
					for _, r := range around {
						tr += w.trace(audits, k.job, r.slot)
					}
					bad("ran: %s %s did not run in a fault-free window (%s; runs around it: %s)%s", k.job, k.slot, orNone(why), describeRuns(around), tr)
				}
			}
		}
	}

	rv, replaced := w.checkReplaced(audits, runs, from, to)
	viol = append(viol, rv...)
	st.replaced += replaced

	// Runs that started in the window: exclusion, tokens, abandonment.
	for _, d := range w.cfg.jobs {
		var rs []*runRec
		for _, r := range byJob[d.name] {
			if !r.start.Before(from) && r.start.Before(to) {
				rs = append(rs, r)
			}
		}
		all := byJob[d.name]
		sort.Slice(all, func(a, b int) bool { return all[a].start.Before(all[b].start) })
		seen := map[uint64]*runRec{}
		var maxAll, maxOld uint64 // over every earlier run / those 10 s or more earlier
		old := 0
		for _, r := range all {
			if o, dup := seen[r.token]; dup && o != r {
				bad("tokens: %s token %d given to %s and %s", d.name, r.token, describeRuns([]*runRec{o}), describeRuns([]*runRec{r}))
			}
			seen[r.token] = r
			for ; old < len(all) && !all[old].start.After(r.start.Add(-10*time.Second)); old++ {
				maxOld = max(maxOld, all[old].token)
			}
			if prev := map[bool]uint64{true: maxAll, false: maxOld}[d.overlap != scheduler.OverlapAllow]; r.token <= prev &&
				!r.start.Before(from) && r.start.Before(to) {
				bad("tokens: %s run %s (token %d) started after a run with token %d", d.name, r.slot, r.token, prev)
			}
			maxAll = max(maxAll, r.token)
		}
		if d.overlap != scheduler.OverlapAllow {
			for _, o := range overlaps(rs, all) {
				bad("exclusive: %s runs overlap: %s", d.name, o)
			}
		}
		// A dead run is reported by the winner of a later slot of its job,
		// once its lease has expired: give that five periods (at least ten
		// minutes) before asking for the report.
		sched, _ := scheduler.ParseSchedule(d.spec, time.UTC)
		first := sched.Next(w.start)
		settle := max(10*time.Minute, 5*sched.Next(first).Sub(first))
		for _, r := range rs {
			r.inst.mu.Lock()
			died := r.inst.died
			r.inst.mu.Unlock()
			reported := abandonedRun[r.runID] == 1 || (abandonedRun[r.runID] == 0 && unconfirmedRun[r.runID] == 1 && w.couldNotConfirm(r))
			if r.end.IsZero() && !died.IsZero() && time.Since(died) >= settle && !reported {
				bad("abandoned: %s %s run %s on %s died at %s; run.abandoned lines: %d%s",
					d.name, r.slot, r.runID, r.replica, died.Sub(w.start), abandonedRun[r.runID], w.trace(audits, d.name, r.slot))
			}
		}
	}
	viol = append(viol, w.groupOverLimit(runs, from, to)...)
	return viol, st
}

// overlaps returns the pairs among runs (checked against all, sorted by
// start) whose active times intersect: [start, end or death), less the
// process's pauses.
func overlaps(runs, all []*runRec) []string {
	var out []string
	for _, a := range runs {
		segs := active(a)
		if len(segs) == 0 {
			continue
		}
		last := segs[len(segs)-1][1]
		i := sort.Search(len(all), func(i int) bool { return !all[i].start.Before(a.start) })
		for _, b := range all[i:] {
			if !b.start.Before(last) {
				break
			}
			if a == b {
				continue
			}
			if at := firstCommon(segs, active(b)); !at.IsZero() {
				out = append(out, describeRuns([]*runRec{a, b})+" at "+at.Format(time.RFC3339Nano))
			}
		}
	}
	return out
}

// active is the list of intervals in which r's process was running it.
func active(r *runRec) [][2]time.Time {
	in := r.inst
	in.mu.Lock()
	defer in.mu.Unlock()
	end := r.end
	if end.IsZero() {
		end = in.died
	}
	if end.IsZero() {
		end = time.Now()
	}
	segs := [][2]time.Time{{r.start, end}}
	for _, p := range in.pauses {
		pe := p[1]
		if pe.IsZero() {
			pe = time.Now()
		}
		var next [][2]time.Time
		for _, s := range segs {
			if !p[0].Before(s[1]) || !pe.After(s[0]) {
				next = append(next, s)
				continue
			}
			if p[0].After(s[0]) {
				next = append(next, [2]time.Time{s[0], p[0]})
			}
			if pe.Before(s[1]) {
				next = append(next, [2]time.Time{pe, s[1]})
			}
		}
		segs = next
	}
	return segs
}

func firstCommon(a, b [][2]time.Time) time.Time {
	for _, x := range a {
		for _, y := range b {
			lo, hi := x[0], x[1]
			if y[0].After(lo) {
				lo = y[0]
			}
			if y[1].Before(hi) {
				hi = y[1]
			}
			if lo.Before(hi) {
				return lo
			}
		}
	}
	return time.Time{}
}

func describeRuns(rs []*runRec) string {
	s := ""
	for i, r := range rs {
		if i > 0 {
			s += " / "
		}
		end := "never ended"
		if !r.end.IsZero() {
			end = r.end.Format("15:04:05.000")
		}
		s += fmt.Sprintf("%s %s on %s run %s token %d %s–%s", r.job, r.slot, r.replica, r.runID, r.token,
			r.start.Format("15:04:05.000"), end)
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "no audit event"
	}
	return "skipped: " + s
}

// trace lists the audit events about one slot, when SIM_TRACE is set.
func (w *world) trace(audits []auditRec, job, slot string) string {
	if os.Getenv("SIM_TRACE") == "" {
		return ""
	}
	out := ""
	for _, a := range audits {
		if a.job == job && a.slot == slot {
			out += fmt.Sprintf("\n\t%s %s(%s) %s reason=%s run=%s holder=%s err=%s", a.at.Sub(w.start), a.replica, a.inst.name,
				a.event, a.reason, a.runID, a.holder, a.errText)
		}
	}
	for _, st := range w.net.Stores() {
		for k, v := range st.Dump() {
			if strings.Contains(k, "{"+job+"}:claims") || strings.Contains(k, "{"+job+"}:lives") {
				out += fmt.Sprintf("\n\t%s %s: %s", st.Name(), k, v)
			}
		}
	}
	w.faults.mu.Lock()
	for _, f := range w.faults.faults {
		out += fmt.Sprintf("\n\tfault %s %s %s..%s", f.kind, f.detail, f.from.Sub(w.start), f.to.Sub(w.start))
	}
	w.faults.mu.Unlock()
	return out
}
