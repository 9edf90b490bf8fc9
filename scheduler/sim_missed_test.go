package scheduler_test

import (
	"fmt"
	"slices"
	"strings"
)

// The missed invariant, with the backfills: a slot reported missed may be
// backfilled, once, and never one that may have run.

// checkMissed is the missed invariant for slot k, reported missed by m,
// whose runs are rs: a plain report (not may_have_started) at most once,
// never for a slot that started before it nor while the job was surely
// paused; a may_have_started report at most once for the run it names,
// which could not confirm its start. A backfill may run a slot after its
// plain report (that is what backfill is for), never after a
// may_have_started one of another run.
func (w *world) checkMissed(k slotKey, m []auditRec, rs []*runRec, surelyPaused bool) (viol []string) {
	var plain []auditRec
	named := map[string]int{}
	for _, a := range m {
		if a.mayHaveStarted {
			named[a.runID]++
		} else {
			plain = append(plain, a)
		}
	}
	if len(plain) > 1 {
		viol = append(viol, fmt.Sprintf("missed: %s %s reported missed %d times", k.job, k.slot, len(plain)))
	}
	for id, n := range named {
		if n > 1 {
			viol = append(viol, fmt.Sprintf("missed: %s %s reported missed, may have started (run %s), %d times", k.job, k.slot, id, n))
		}
	}
	for _, r := range rs {
		switch {
		case named[r.runID] > 0:
			if !w.couldNotConfirm(r) {
				viol = append(viol, fmt.Sprintf("missed: %s %s reported missed, may have started, but run %s started and could confirm it",
					k.job, k.slot, describeRuns([]*runRec{r})))
			}
		case w.backfillAfter(r, plain, m):
		case len(plain) > 0:
			viol = append(viol, fmt.Sprintf("missed: %s %s reported missed (%s) but it started (%s)", k.job, k.slot, plain[0].reason,
				describeRuns([]*runRec{r})))
		default:
			viol = append(viol, fmt.Sprintf("missed: %s %s reported missed, may have started (run %s), but run %s started",
				k.job, k.slot, m[0].runID, describeRuns([]*runRec{r})))
		}
	}
	if len(plain) > 0 && len(rs) == 0 && surelyPaused {
		viol = append(viol, fmt.Sprintf("missed: %s %s reported missed (%s) while the job was paused", k.job, k.slot, plain[0].reason))
	}
	return viol
}

// backfillAfter reports whether r is a backfill's run that started after
// a plain missed report of its slot and after no may_have_started report
// naming another run (that slot may have run: never again).
func (w *world) backfillAfter(r *runRec, plain, m []auditRec) bool {
	if !w.isBackfill(r.inst) || len(plain) == 0 || !plain[0].at.Before(r.start) {
		return false
	}
	for _, a := range m {
		if a.mayHaveStarted && a.runID != r.runID && a.at.Before(r.start) {
			return false
		}
	}
	return true
}

func (w *world) isBackfill(in *instance) bool { return strings.HasPrefix(in.name, "backfill-") }

// backfillOfMissed reports whether slot k's abandoned and missed reports
// are honest together: every abandoned run is a backfill's run of a slot
// reported missed before it started.
func (w *world) backfillOfMissed(k slotKey, abandoned, m []auditRec, rs []*runRec) bool {
	var plain []auditRec
	for _, a := range m {
		if !a.mayHaveStarted {
			plain = append(plain, a)
		}
	}
	for _, a := range abandoned {
		i := slices.IndexFunc(rs, func(r *runRec) bool { return r.runID == a.runID })
		if i < 0 || !w.backfillAfter(rs[i], plain, m) {
			return false
		}
	}
	return true
}
