package smallworld

import "slices"

// Independence: two actions are independent when, both possible, taking
// them in either order leads to the same state and neither disables the
// other. Conservatively, these are: actions of different processes that
// touch different stores (a request runs on its store only; its answer
// wakes its sender only). Time passing, restarting a store empty (allowed
// by what the other stores hold), two faults (one budget) and two steps
// (each may draw a random token: their order is the tokens' order) depend
// on everything of their kind.
func independent(a, b action) bool {
	switch {
	case a == b, a.kind == "tick", b.kind == "tick", a.kind == "wipe", b.kind == "wipe":
		return false
	case isFault(a.kind) && isFault(b.kind), a.kind == "step" && b.kind == "step":
		return false
	case a.actor != "" && a.actor == b.actor:
		return false
	}
	sa, sb := storeOf(a), storeOf(b)
	return sa < 0 || sb < 0 || sa != sb
}

// storeOf is the store an action touches, -1 for none.
func storeOf(a action) int {
	switch a.kind {
	case "deliver", "lose", "freeze", "thaw", "wipe":
		return a.store
	}
	return -1
}

// childSleep is the sleep set after taking f.alts[i]: what was asleep at
// f, and the alternatives explored before it, that are independent of it.
func childSleep(f *frame, i int) []action {
	taken := f.alts[i]
	var out []action
	for _, z := range append(slices.Clone(f.sleep), f.alts[:i]...) {
		if independent(z, taken) && !slices.Contains(out, z) {
			out = append(out, z)
		}
	}
	return out
}

func without(xs, drop []action) []action {
	var out []action
	for _, x := range xs {
		if !slices.Contains(drop, x) {
			out = append(out, x)
		}
	}
	return out
}

func intersect(xs, keep []action) []action {
	var out []action
	for _, x := range xs {
		if slices.Contains(keep, x) {
			out = append(out, x)
		}
	}
	return out
}
