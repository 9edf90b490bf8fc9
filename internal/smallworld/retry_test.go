package smallworld

import (
	"fmt"
	"slices"
)

// A one-shot process's retried end. A settler, a backfill or a
// reconciler's pass run as a command exits once its call returns, so an
// end the stores did not answer is retried within its grace
// (scheduler/outage.go's finishEnd) and then given up; the entry an end
// writes makes a later settler close the claim as recorded
// (closeRecorded), unless the claim was left on a majority
// (Abandoned.Majority): then it settles and reports it again. The worlds
// here lose the end's answers (the mute fault: a request runs on its
// store, its answer never comes back) and let the process die at the
// retry (killed between its steps: before retrying, or after a retry
// that failed too).
//
// The known limit: a settler whose end lands on a majority, whose
// answers are all lost and which dies before retrying leaves the entry
// written and its done marker over the claim, so no one settles it
// again — the history holds the outcome, and run.abandoned (or
// slot.missed) is never logged. checkUnreported holds the history to
// that: a run that no line reports has its entry on a majority of the
// stores.

var retryWorlds = map[string]worldConfig{
	// A replica's run killed between its steps, a settler pointed at it a
	// TTL later whose answers may be lost and which may die at any step:
	// four faults, enough for an end that lands on two stores unanswered
	// and a death before the retry.
	"retry": {name: "retry", slots: 1, replicas: []string{"R1"}, settlers: []string{"S1"}, faults: 4,
		kinds: []string{"crash", "mute"}, victims: []string{"R1", "S1"}, muted: []string{"S1"}, ticks: 1, killAtSteps: true},
	// A backfill (a one-shot command) whose end's answers are lost and
	// which may die at any step; the reconciler's pass before it, and a
	// settler a TTL later.
	"retrybackfill": {name: "retrybackfill", slots: 1, settlers: []string{"S1"}, reconcilers: []string{"C1"}, backfills: []string{"B1"},
		faults: 3, kinds: []string{"crash", "mute"}, victims: []string{"B1"}, muted: []string{"B1"}, ticks: 3, killAtSteps: true,
		at: map[string]int{"C1": 0, "B1": 1, "S1": 2}},
}

func init() {
	for n, c := range retryWorlds {
		worlds[n] = c
	}
}

// checkUnreported: a run whose body started and that no line reports
// (its own end's, run.abandoned, slot.missed) has an entry naming it on a
// majority of the stores: its outcome is not closed silently, only its
// line is lost. Such runs are counted (w.unreported). w.mu is held.
func (w *world) checkUnreported() []violation {
	var out []violation
	for _, r := range w.runs {
		if w.trimmed[r.slot] || slices.ContainsFunc(w.reports, func(x reportRec) bool { return x.detail == r.id }) {
			continue
		}
		w.unreported++
		on := 0
		for _, log := range w.logs[r.slot] {
			if slices.ContainsFunc(log, func(v string) bool { return parsed(v).RunID == r.id }) {
				on++
			}
		}
		if on < 2 {
			out = append(out, violation{"unreported-run-on-a-minority", fmt.Sprintf("slot %d: run %s (%s) reported by no line, its entry on %d store(s): %q",
				r.slot, r.id, r.actor, on, w.logs[r.slot])})
		}
	}
	return out
}
