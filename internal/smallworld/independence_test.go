package smallworld

import (
	"slices"
)

// Independence: two actions are independent when, both possible, taking
// them in either order leads to the same state and neither disables the
// other. Conservatively, these are: actions of different processes that
// touch different stores (a request runs on its store only; its answer
// wakes its sender only). Time passing, restarting a store empty, failing
// it over or stepping its clock (allowed by what the other stores hold), two faults
// (one budget) and two steps (each may draw a random token: their order
// is the tokens' order) depend on everything of their kind.
func independent(a, b action) bool {
	switch {
	case a == b, a.kind == "tick", b.kind == "tick", a.kind == "expire", b.kind == "expire", a.kind == "wipe", b.kind == "wipe", a.kind == "failover", b.kind == "failover", a.kind == "leap", b.kind == "leap":
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
	case "deliver", "lose", "mute", "freeze", "thaw", "wipe", "failover", "leap":
		return a.store
	}
	return -1
}

// independentAt is independent, or, for two requests of different
// processes at one store, whether they commute there now: run in either
// order on copies of the store, they get the same answers and leave the
// same contents.
func (w *world) independentAt(a, b action) bool {
	if independent(a, b) {
		return true
	}
	if a.kind != "deliver" || b.kind != "deliver" || a.store != b.store || a.actor == b.actor {
		return false
	}
	if w.cfg.failovers() {
		// Their order decides which of them is the store's last change,
		// the one a failover loses.
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	ra, rb := w.find(a.actor, a.store, a.k), w.find(b.actor, b.store, b.k)
	if ra == nil || rb == nil || w.frozen[a.store] {
		return false
	}
	s1, s2 := w.stores[a.store].Clone(), w.stores[a.store].Clone()
	a1, e1 := s1.Apply(ra.op)
	b1, f1 := s1.Apply(rb.op)
	b2, f2 := s2.Apply(rb.op)
	a2, e2 := s2.Apply(ra.op)
	return e1 == nil && f1 == nil && e2 == nil && f2 == nil &&
		resultText(ra.op, a1) == resultText(ra.op, a2) && resultText(rb.op, b1) == resultText(rb.op, b2) && s1.Snapshot() == s2.Snapshot()
}

// sleeps are the sleep sets after taking each of f.alts in w's state:
// what was asleep at f, and the alternatives explored before it, that are
// independent of it.
func (w *world) sleeps(f *frame) [][]action {
	out := make([][]action, len(f.alts))
	for i, taken := range f.alts {
		for _, z := range append(slices.Clone(f.sleep), f.alts[:i]...) {
			if !slices.Contains(out[i], z) && w.independentAt(z, taken) {
				out[i] = append(out[i], z)
			}
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
