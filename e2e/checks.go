//go:build linux

package e2e

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// The individual checks of the table in checker.go, and the rules that
// excuse a miss or an overlap.

// checkDuplicates: a slot with more than one run, in the ledger or in the
// run.started lines, or a run id started as attempt 1 more than once.
func checkDuplicates(s *scenario, r *Report, f *Finding) {
	for _, run := range s.Runs {
		if run.FirstAttempts > 1 {
			r.Duplicates += run.FirstAttempts - 1
			f.problem("duplicate: run %s of %s slot %s started attempt 1 %d times", run.RunID, run.Job, slotString(run), run.FirstAttempts)
		}
	}
	for _, k := range sortedKeys(s.bySlot) {
		runs := s.bySlot[k]
		if len(runs) > 1 {
			r.Duplicates += len(runs) - 1
			var ev []string
			for _, run := range runs {
				ev = append(ev, fmt.Sprintf("%s token=%d run_id=%s start=%s", run.Replica, run.Token, run.RunID, stamp(run.Start)))
			}
			f.problem("duplicate: %s slot %s ran %d times: %s", k.job, time.Unix(k.slot, 0).UTC().Format(time.RFC3339), len(runs), strings.Join(ev, "; "))
		}
	}
	// Runs the logs claim but the ledger lacks (a job killed before it
	// wrote) still count.
	for _, k := range sortedKeys(s.evBySlot) {
		ids := map[string]bool{}
		for _, run := range s.bySlot[k] {
			ids[run.RunID] = true
		}
		var extra []string
		for _, e := range s.evBySlot[k] {
			if e.Event == "run.started" && !ids[e.RunID] {
				ids[e.RunID] = true
				extra = append(extra, fmt.Sprintf("%s run_id=%s token=%d (log only)", e.Replica, e.RunID, e.Token))
			}
		}
		if len(extra) > 0 && len(ids) > 1 {
			r.Duplicates += len(extra)
			if len(s.bySlot[k]) == 0 {
				r.Duplicates-- // the first log-only run is the slot's one run
			}
			f.problem("duplicate: %s slot %s has %d run ids in run.started lines: %s", k.job,
				time.Unix(k.slot, 0).UTC().Format(time.RFC3339), len(ids), strings.Join(extra, "; "))
		}
	}
}

// checkMisses: an expected slot with no run, outside the fault windows,
// unless a forbid job's slot was skipped for overlap while a run of the
// job really went on. It also counts the slots that ran, were skipped for
// overlap, or were not run inside a fault window.
func checkMisses(s *scenario, r *Report, f *Finding) {
	for _, err := range s.schedErr {
		r.Misses++
		f.problem("%v", err)
	}
	for _, x := range s.expected {
		k := keyOf(x.job.Name, x.slot)
		switch {
		case len(s.bySlot[k]) > 0:
			r.Ran++
		case x.legit:
			r.MissesExcused++
		case x.job.Forbid && overlapSkipJustified(s.evBySlot[k], s.byJob[x.job.Name], x.slot, s.Skew, s.end):
			r.OverlapSkipped++
		case x.job.Forbid && skippedFor(s.evBySlot[k], "overlap") && s.groupWaitAround(x.job.Name, x.slot):
			// The job lease was held by an attempt of a neighbouring slot
			// waiting for its group's permit (it ended group_full).
			r.OverlapSkipped++
		case skippedFor(s.evBySlot[k], "paused"):
			r.PausedSkipped++
		case skippedFor(s.evBySlot[k], "group_full"):
			// The winner held the slot and found no permit until the
			// lateness bound: handled, its body never started.
			r.GroupFullSkipped++
		default:
			r.Misses++
			f.problem("miss: %s slot %s did not run; log: %s", x.job.Name, x.slot.Format(time.RFC3339), describe(s.evBySlot[k]))
		}
	}
}

// checkOverlaps: two runs of a forbid job whose [start, end] intersect,
// unless the contract excuses it (excusedOverlap).
func checkOverlaps(s *scenario, r *Report, f *Finding) {
	for _, job := range s.jobs {
		if !s.forbid[job] {
			continue
		}
		runs := s.byJob[job]
		for i := range runs {
			ea := s.end(runs[i])
			for k := i + 1; k < len(runs); k++ {
				a, b := runs[i], runs[k]
				if !b.Start.Before(ea) { // b starts after a ended
					continue
				}
				if why, ok := excusedOverlap(a, ea, b, s.Freezes, s.CancelWithin); ok {
					r.ExcusedOverlaps++
					r.Excused = append(r.Excused, fmt.Sprintf("%s: run %s (%s, token %d) overlapped run %s (%s, token %d): %s",
						job, a.RunID, a.Replica, a.Token, b.RunID, b.Replica, b.Token, why))
					continue
				}
				r.Overlaps++
				f.problem("overlap: %s run %s (%s, slot %s, token %d, %s..%s) and run %s (%s, slot %s, token %d, start %s)",
					job, a.RunID, a.Replica, slotString(a), a.Token, stamp(a.Start), endString(a, ea),
					b.RunID, b.Replica, slotString(b), b.Token, stamp(b.Start))
			}
		}
	}
}

// checkTokens: per job, runs ordered by start must have strictly
// increasing tokens, and the attempts of a run must agree on token, slot
// and replica.
func checkTokens(s *scenario, r *Report, f *Finding) {
	for _, run := range s.Runs {
		if run.Inconsistent != "" {
			r.TokenViolations++
			f.problem("inconsistent attempts: %s", run.Inconsistent)
		}
	}
	for _, job := range s.jobs {
		runs := s.byJob[job]
		for i := 1; i < len(runs); i++ {
			a, b := runs[i-1], runs[i]
			if b.Token > a.Token {
				continue
			}
			w, ok := bothIn(s.HostPauses, a.Slot, b.Slot)
			if !ok && !s.forbid[job] {
				w, ok = bothIn(s.Together, a.Slot, b.Slot)
			}
			if ok {
				r.Excused = append(r.Excused, fmt.Sprintf("%s: run %s (slot %s, token %d) started after run %s (slot %s, token %d): %s",
					job, b.RunID, slotString(b), b.Token, a.RunID, slotString(a), a.Token, w.Why))
				continue
			}
			r.TokenViolations++
			f.problem("token order: %s run %s (%s, slot %s, start %s) token %d after run %s (%s, slot %s, start %s) token %d",
				job, b.RunID, b.Replica, slotString(b), stamp(b.Start), b.Token,
				a.RunID, a.Replica, slotString(a), stamp(a.Start), a.Token)
		}
	}
}

// checkExplained: every expected slot has a log line that accounts for
// it — a run.started, a run.abandoned, a slot.missed (a winner that
// stopped before confirming its start), a slot.skipped with an explaining
// reason or, inside a fault window, a slot.acquired by the replica the
// fault then stopped.
func checkExplained(s *scenario, r *Report, f *Finding) {
	for _, x := range s.expected {
		evs := s.evBySlot[keyOf(x.job.Name, x.slot)]
		explained := false
		for _, e := range evs {
			switch {
			case e.Event == "run.started" || e.Event == "run.abandoned" || e.Event == "slot.missed":
				explained = true
			case e.Event == "slot.skipped" && explainingSkips[e.Reason]:
				explained = true
			case e.Event == "slot.acquired" && x.legit:
				// Won by a replica that a fault then stopped.
				explained = true
			}
		}
		switch {
		case explained:
		case x.legit:
			r.UnexplainedInGap++
		default:
			r.Unexplained++
			f.problem("unexplained: %s slot %s: no run.started, no run.abandoned, no slot.skipped that explains it; log: %s",
				x.job.Name, x.slot.Format(time.RFC3339), describe(evs))
		}
	}
}

// checkLedgerLog: every scheduled run in the ledger has a run.started line
// with the same replica, run id, token and slot, and every log line's slot
// parses.
func checkLedgerLog(s *scenario, r *Report, f *Finding) {
	for _, e := range s.badSlots {
		r.LogMismatches++
		f.problem("log line with a bad slot %q: %s %s", e.Slot, e.Replica, e.Event)
	}
	for _, run := range s.Runs {
		if run.Manual {
			continue
		}
		ok := false
		for _, e := range s.started[run.Job+"\x00"+run.RunID] {
			if e.Replica == run.Replica && e.Token == run.Token && e.Slot == run.Slot.Format(time.RFC3339) {
				ok = true
			}
		}
		if !ok {
			r.LogMismatches++
			f.problem("log mismatch: ledger run %s of %s slot %s on %s token %d has no run.started line with that replica, token and slot",
				run.RunID, run.Job, slotString(run), run.Replica, run.Token)
		}
	}
	// run.abandoned only for a run that started (issue #21): its run id
	// is a run of that slot in the ledger.
	for k, evs := range s.evBySlot {
		for _, e := range evs {
			if e.Event != "run.abandoned" {
				continue
			}
			i := slices.IndexFunc(s.bySlot[k], func(run Run) bool { return run.RunID == e.RunID })
			if i < 0 {
				r.LogMismatches++
				f.problem("log mismatch: run.abandoned for %s slot %s run %s on %s, but no such run started (ledger)",
					e.Job, e.Slot, e.RunID, e.Holder)
				continue
			}
			if run := s.bySlot[k][i]; s.endedUnhindered(run) {
				r.LogMismatches++
				f.problem("log mismatch: run.abandoned for %s slot %s run %s on %s, but the run ended (%s at %s) on a replica neither frozen nor killed while it ran, outside every fault window",
					e.Job, e.Slot, e.RunID, e.Holder, run.Outcome, run.End.Format(time.RFC3339Nano))
			}
		}
	}
}

// endedUnhindered reports whether run ended by itself (succeeded or
// failed, not canceled) while its replica was neither frozen nor killed
// and outside every declared fault window: its lease was renewed to its
// end, so no majority could judge it abandoned, and a run.abandoned for it
// is a phantom outcome (a node whose clock was stepped, alone, must not
// make one).
func (s *scenario) endedUnhindered(run Run) bool {
	if run.End.IsZero() || (run.Outcome != "ok" && run.Outcome != "failed") || s.inLegit(run.Slot) {
		return false
	}
	for _, fr := range s.Freezes {
		if fr.Replica == run.Replica && fr.From.Before(run.End) && fr.To.After(run.Start) {
			return false
		}
	}
	for _, k := range s.Kills {
		if k.Replica == run.Replica && k.At.After(run.Start) && k.At.Before(run.End) {
			return false
		}
	}
	return true
}

// runEnd is a run's end line, else the first kill of its replica after it
// started, else now.
func runEnd(run Run, kills []Kill, now time.Time) time.Time {
	if !run.End.IsZero() {
		return run.End
	}
	best := now
	for _, k := range kills {
		if k.Replica == run.Replica && !k.At.Before(run.Start) && k.At.Before(best) {
			best = k.At
		}
	}
	return best
}

// quickEnd is how soon after waking a stale run that was not canceled may
// end and still count as "stopped as soon as it woke".
const quickEnd = 250 * time.Millisecond

// excusedOverlap: the earlier run a belongs to a replica that was frozen
// while a ran and before b started (so a's lease could expire), b has the
// higher token, and a was canceled within cancelWithin of the replica
// waking (or ended by itself within quickEnd of it).
func excusedOverlap(a Run, ea time.Time, b Run, freezes []Freeze, cancelWithin time.Duration) (string, bool) {
	if b.Token <= a.Token {
		return "", false
	}
	for _, f := range freezes {
		if f.Replica != a.Replica {
			continue
		}
		if f.From.Before(a.Start) || f.From.After(b.Start) || f.From.After(ea) {
			continue
		}
		if ea.After(f.To.Add(cancelWithin)) {
			continue
		}
		// It must have been canceled on waking, or have ended by itself
		// at once (its job had finished its work while frozen).
		if a.Outcome != "canceled" && ea.After(f.To.Add(quickEnd)) {
			continue
		}
		return fmt.Sprintf("%s frozen %s..%s", f.Replica, stamp(f.From), stamp(f.To)), true
	}
	return "", false
}

// bothIn is the window of ws that holds both slot times, if any.
func bothIn(ws []Window, a, b time.Time) (Window, bool) {
	for _, w := range ws {
		if w.contains(a) && w.contains(b) {
			return w, true
		}
	}
	return Window{}, false
}

// explainingSkips are the slot.skipped reasons that account for a slot no
// replica ran (held and done point at another replica that did).
var explainingSkips = map[string]bool{
	"overlap": true, "late": true, "no_quorum": true, "slow_lock": true, "shutdown": true, "claimed": true,
	"paused": true, "group_full": true,
}

// skippedFor: a replica skipped the slot for reason — paused: the lock
// stores said the job was paused (the pause register is read in the
// claim's own script); group_full: the replica that won it found no
// permit of its group.
func skippedFor(evs []Event, reason string) bool {
	for _, e := range evs {
		if e.Event == "slot.skipped" && e.Reason == reason {
			return true
		}
	}
	return false
}

// overlapSkipJustified: some replica skipped the slot with reason overlap,
// and a run of the job was going on around the slot's time (within skew
// and half a second, for process start and lease release).
func overlapSkipJustified(evs []Event, runs []Run, slot time.Time, skew time.Duration, end func(Run) time.Time) bool {
	skipped := false
	for _, e := range evs {
		if e.Event == "slot.skipped" && e.Reason == "overlap" {
			skipped = true
		}
	}
	if !skipped {
		return false
	}
	tol := skew + 500*time.Millisecond
	for _, run := range runs {
		if !run.Start.After(slot.Add(tol)) && !end(run).Before(slot.Add(-tol)) {
			return true
		}
	}
	return false
}
