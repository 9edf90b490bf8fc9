package smallworld

import (
	"fmt"
	"slices"
)

// violation is one broken invariant in a terminal state: its class (the
// invariant and the shape of the break) and what was seen.
type violation struct {
	class, detail string
}

// violations checks the invariants over the ledger and the history of a
// closed world:
//
//   - once: no slot's body started twice;
//   - abandoned ⇒ started: run.abandoned, and an abandoned entry, name a
//     run whose body was invoked;
//   - one outcome: after closing, each slot's history, merged as the
//     history read model merges it (merged), gives exactly one outcome,
//     which agrees with what the jobs saw (succeeded: its run finished;
//     abandoned: its run started; missed: nothing started;
//     may_have_started: a holder of its claim was lost before confirming);
//     every entry written, merged away or not, is true of its kind;
//   - tokens: unique per job, and greater than every token granted before
//     the claim began.
func (w *world) violations() []violation {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []violation
	for slot := range w.cfg.slots {
		out = append(out, w.checkSlot(slot)...)
	}
	out = append(out, w.checkReports()...)
	out = append(out, w.checkOverlap()...)
	out = append(out, w.checkUnreported()...)
	return append(out, w.checkTokens()...)
}

func (w *world) runsOf(slot int) []runRec {
	var rs []runRec
	for _, r := range w.runs {
		if r.slot == slot {
			rs = append(rs, r)
		}
	}
	return rs
}

func (w *world) checkSlot(slot int) []violation {
	var out []violation
	runs := w.runsOf(slot)
	if len(runs) > 1 {
		out = append(out, violation{"once", fmt.Sprintf("slot %d started %d times: %v", slot, len(runs), runs)})
	}
	entries := w.final[slot]
	top := merged(entries)
	switch {
	case len(entries) == 0 && w.trimmed[slot]:
		// Trimmed at history.keep: a documented limit (backfill refuses
		// such a slot: "beyond history"); once still holds.
	case len(entries) == 0 && len(runs) > 0:
		out = append(out, violation{"started-run-without-outcome",
			fmt.Sprintf("slot %d started (run %s on %s) and has no history entry at the end (claim open: %v)", slot, runs[0].id, runs[0].actor, w.open[slot])})
	case len(entries) == 0:
		out = append(out, violation{"slot-without-outcome", fmt.Sprintf("slot %d has no history entry at the end (claim open: %v)", slot, w.open[slot])})
	case len(top) > 1:
		out = append(out, violation{"two-outcomes", fmt.Sprintf("slot %d has %d entries of the same precedence, the history merge cannot pick one: %q", slot, len(top), entries)})
	}
	out = append(out, w.checkMajorities(slot, runs)...)
	for _, e := range entries {
		if v, bad := w.checkEntry(slot, e, runs, len(top) == 1 && sameOutcome(e, top[0])); bad {
			out = append(out, v)
		}
	}
	return out
}

// merged is the entries that the read model (scheduler/history's
// join) ranks first by their evidence: one outcome where the evidence
// decides it.
// Two settlers' entries for one run's outcome (each names its settler)
// are one outcome.
func merged(entries []string) []string {
	var top []string
	best := -1
	for _, e := range entries {
		switch p := evidence(e); {
		case p > best:
			top, best = []string{e}, p
		case p == best && !slices.ContainsFunc(top, func(x string) bool { return sameOutcome(x, e) }):
			top = append(top, e)
		}
	}
	return top
}

// sameOutcome reports whether entries a and b give one outcome of one
// run, whoever wrote them: the same kind and run id.
func sameOutcome(a, b string) bool {
	return kindOf(a) == kindOf(b) && parsed(a).RunID == parsed(b).RunID
}

// checkEntry checks one history entry of slot against what the jobs saw.
// Every entry is true of its own kind (abandoned ⇒ started, succeeded ⇒
// ran, may_have_started ⇒ a holder lost before confirming); the merged
// one (final) must also agree with what the jobs saw: missed only for a
// slot whose body never started.
func (w *world) checkEntry(slot int, e string, runs []runRec, final bool) (violation, bool) {
	outcome, id := kindOf(e), parsed(e).RunID
	ran := slices.ContainsFunc(runs, func(r runRec) bool { return r.id == id })
	switch outcome {
	case outSucceeded:
		if !ran {
			return violation{"succeeded-not-run", fmt.Sprintf("slot %d: entry %q for a run that never started", slot, e)}, true
		}
	case outAbandoned:
		if !ran {
			return violation{"abandoned-not-started", fmt.Sprintf("slot %d: entry %q, but run %s never started (runs: %v)", slot, e, id, runs)}, true
		}
	case outMissed, outSkippedLate, outSkippedPaused, outSkippedOverlap:
		if final && len(runs) > 0 {
			return violation{"missed-but-started", fmt.Sprintf("slot %d: entry %q, but it started: %v", slot, e, runs)}, true
		}
	case outMayHaveStarted:
		if !w.lostClaims[id] && !slices.ContainsFunc(w.grants, func(g *grantRec) bool { return g.slot == slot && g.lost && !g.taken }) {
			return violation{"uncertain-without-cause", fmt.Sprintf("slot %d: entry %q, but no holder of its claim was lost before confirming, nor its claimer during its claim", slot, e)}, true
		}
	default:
		return violation{"unknown-outcome", fmt.Sprintf("slot %d: entry %q", slot, e)}, true
	}
	return violation{}, false
}

// checkReports: run.abandoned names a started run, once; a plain
// slot.missed (nobody ran it) is a verdict some store held before any run
// of its slot began (a backfill's recovering it), never one reached while
// or after a run went on.
func (w *world) checkReports() []violation {
	var out []violation
	seen := map[string]int{}
	for _, r := range w.reports {
		if r.kind == "slot."+outMissed && r.detail == "" && r.early > 0 { // a plain verdict, not a settler's may_have_started
			out = append(out, violation{"missed-while-started", fmt.Sprintf("%s logged slot.missed for slot %d, whose run began before any store held that verdict (runs: %v)", r.actor, r.slot, w.runs)})
		}
		if r.kind != "run.abandoned" {
			continue
		}
		seen[r.detail]++
		if !slices.ContainsFunc(w.runs, func(x runRec) bool { return x.id == r.detail }) {
			out = append(out, violation{"abandoned-not-started", fmt.Sprintf("%s logged run.abandoned for slot %d run %s, which never started (runs: %v)", r.actor, r.slot, r.detail, w.runs)})
		}
		if seen[r.detail] == 2 {
			out = append(out, violation{"abandoned-twice", fmt.Sprintf("run %s of slot %d reported abandoned twice", r.detail, r.slot)})
		}
	}
	return out
}

// checkTokens: unique, and above every token granted before the claim
// began.
func (w *world) checkTokens() []violation {
	var out []violation
	for i, g := range w.grants {
		for _, h := range w.grants[:i] {
			if g.token == h.token {
				out = append(out, violation{"tokens", fmt.Sprintf("token %d granted to %s (slot %d) and %s (slot %d)", g.token, h.actor, h.slot, g.actor, g.slot)})
			}
		}
		for _, h := range w.grants {
			if h.end < g.begin && g.token <= h.token {
				out = append(out, violation{"tokens", fmt.Sprintf("token %d of %s (slot %d) is not above %d, granted to %s before it began", g.token, g.actor, g.slot, h.token, h.actor)})
			}
		}
	}
	return out
}
