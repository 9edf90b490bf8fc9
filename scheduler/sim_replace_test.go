package scheduler_test

import (
	"fmt"
	"time"

	"github.com/slotlock/slotlock/scheduler"
)

// checkReplaced is the replaced invariant over the audit events about
// slots in [from, to) (manual runs: logged in it): every run.canceled and
// slot.skipped with reason replaced is about a replace job and names, in
// by_slot, a slot of that job's schedule later than its own slot (for a
// manual run: due after the run started, less the clock offsets).
// It also returns how many runs were replaced.
func (w *world) checkReplaced(audits []auditRec, runs []*runRec, from, to time.Time) (viol []string, replaced int) {
	defs := map[string]simJobDef{}
	for _, d := range w.cfg.jobs {
		defs[d.name] = d
	}
	byRunID := map[string]*runRec{}
	for _, r := range runs {
		byRunID[r.runID] = r
	}
	for _, a := range audits {
		if a.reason != "replaced" || (a.event != "run.canceled" && a.event != "slot.skipped") {
			continue
		}
		bad := func(format string, args ...any) {
			viol = append(viol, fmt.Sprintf("replaced: %s %s %s on %s: ", a.event, a.job, a.slot, a.replica)+
				fmt.Sprintf(format, args...)+w.trace(audits, a.job, a.slot))
		}
		slot, err := time.Parse(time.RFC3339, a.slot)
		manual := a.slot == "manual"
		if manual {
			if a.at.Before(from) || !a.at.Before(to) {
				continue
			}
		} else if err != nil {
			bad("slot does not parse")
			continue
		} else if slot.Before(from) || !slot.Before(to) {
			continue
		}
		if a.event == "run.canceled" {
			replaced++
		}
		d, ok := defs[a.job]
		if !ok || d.overlap != scheduler.OverlapReplace {
			bad("the job does not have overlap replace")
			continue
		}
		by, err := time.Parse(time.RFC3339, a.bySlot)
		if err != nil {
			bad("by_slot %q is not a slot", a.bySlot)
			continue
		}
		sched, _ := scheduler.ParseSchedule(d.spec, time.UTC)
		if !sched.Next(by.Add(-time.Second)).Equal(by) {
			bad("by_slot %s is not a slot of the job", a.bySlot)
		}
		due := by.Add(scheduler.JitterOffset(d.name, by, d.jitter))
		r := byRunID[a.runID]
		switch {
		case manual && a.event == "run.canceled" && r != nil && !due.After(r.start.Add(-w.cfg.skew)):
			bad("by_slot %s was due at %s, before the manual run started (%s)", a.bySlot,
				due.Format(time.RFC3339Nano), r.start.Format(time.RFC3339Nano))
		case !manual && !by.After(slot):
			bad("by_slot %s is not later than the slot", a.bySlot)
		}
	}
	return viol, replaced
}
