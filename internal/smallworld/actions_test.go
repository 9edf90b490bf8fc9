package smallworld

import (
	"fmt"
	"slices"
	"strings"
)

// An action is one choice of the explorer. Written one per line, they
// make a schedule that replays exactly (testdata/*.trace):
//
//	deliver R1 s0 1   store 0 runs R1's first request to it; R1 gets the answer
//	step R1           R1 takes the step it waits at (its first: it starts)
//	timeout R1        R1's awaited requests time out (at frozen stores, or lost)
//	tick              one lock TTL passes
//	expire            a done marker's lifetime passes: every done marker expires
//	thaw s1           store 1 thaws; its queue runs as later deliveries choose
//	lose R1 s0 2      fault: the request never runs
//	mute R1 s0 2      fault: the request runs now, its answer is lost
//	freeze s1         fault: store 1 runs nothing until it thaws
//	crash R1          fault: R1 dies here; what it sent may still run
//	crash0 R1         fault: R1 died before sending its last round
//	pause R1          fault: R1, holding a lease, is paused while time passes
//	wipe s2           fault: store 2 restarts empty
//	failover s2       fault: store 2 loses its last change (failover_test.go)
//	leap s2           fault: store 2's clock steps a TTL forward (leap_test.go)
type action struct {
	kind  string
	actor string
	store int
	k     int
}

func (x action) String() string {
	switch x.kind {
	case "deliver", "lose", "mute":
		return fmt.Sprintf("%s %s s%d %d", x.kind, x.actor, x.store, x.k)
	case "tick", "expire":
		return x.kind
	case "thaw", "freeze", "wipe", "failover", "leap":
		return fmt.Sprintf("%s s%d", x.kind, x.store)
	}
	return x.kind + " " + x.actor
}

func parseAction(line string) (action, error) {
	f := strings.Fields(line)
	var x action
	if len(f) == 0 {
		return x, fmt.Errorf("empty action")
	}
	x.kind = f[0]
	var err error
	switch {
	case (x.kind == "deliver" || x.kind == "lose" || x.kind == "mute") && len(f) == 4:
		x.actor = f[1]
		_, err = fmt.Sscanf(f[2]+" "+f[3], "s%d %d", &x.store, &x.k)
	case (x.kind == "tick" || x.kind == "expire") && len(f) == 1:
	case slices.Contains([]string{"thaw", "freeze", "wipe", "failover", "leap"}, x.kind) && len(f) == 2:
		_, err = fmt.Sscanf(f[1], "s%d", &x.store)
	case slices.Contains([]string{"step", "timeout", "crash", "crash0", "pause"}, x.kind) && len(f) == 2:
		x.actor = f[1]
	default:
		err = fmt.Errorf("unknown action %q", line)
	}
	return x, err
}

func isFault(kind string) bool {
	return slices.Contains([]string{"lose", "mute", "freeze", "crash", "crash0", "pause", "wipe", "failover", "leap"}, kind)
}

// enabled lists the actions possible now, in the order the explorer
// tries them: the fault-free ones first.
func (w *world) enabled() []action {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.canonicalK()
	if eager := w.eagerStep(); eager != nil {
		return eager
	}
	var out, faults []action
	budget := w.spent < w.cfg.faults
	for _, r := range w.sortedPending() {
		if !r.lost && !w.frozen[r.store] {
			out = append(out, action{kind: "deliver", actor: r.actor.name, store: r.store, k: r.k})
		}
		if !r.lost && budget {
			faults = append(faults, action{kind: "lose", actor: r.actor.name, store: r.store, k: r.k})
			if r.awaited && !w.frozen[r.store] {
				faults = append(faults, action{kind: "mute", actor: r.actor.name, store: r.store, k: r.k})
			}
		}
	}
	for _, a := range w.actors {
		if a.dead || a.done {
			continue
		}
		if w.gateOpen(a) {
			out = append(out, action{kind: "step", actor: a.name})
		}
		if w.canTimeOut(a) {
			out = append(out, action{kind: "timeout", actor: a.name})
		}
		if budget && a.started && (!w.cfg.killAtSteps || a.atGate != "") {
			faults = append(faults, action{kind: "crash", actor: a.name})
			if w.roundUnsent(a) {
				faults = append(faults, action{kind: "crash0", actor: a.name})
			}
			if a.holding != nil && !a.paused {
				faults = append(faults, action{kind: "pause", actor: a.name})
			}
		}
	}
	if w.canTick() {
		out = append(out, action{kind: "tick"})
	}
	if w.canExpire() {
		out = append(out, action{kind: "expire"})
	}
	for i := range w.stores {
		if w.frozen[i] {
			out = append(out, action{kind: "thaw", store: i})
		} else if budget && !w.froze[i] {
			faults = append(faults, action{kind: "freeze", store: i})
		}
		if budget && w.canWipe(i) {
			faults = append(faults, action{kind: "wipe", store: i})
		}
		if budget && w.canFailover(i) {
			faults = append(faults, action{kind: "failover", store: i})
		}
		if budget && w.canLeap(i) {
			faults = append(faults, action{kind: "leap", store: i})
		}
	}
	faults = slices.DeleteFunc(faults, w.cfg.excluded)
	return append(out, faults...)
}

// excluded reports a fault the world does not draw.
func (c worldConfig) excluded(x action) bool {
	return isFault(x.kind) && (c.kinds != nil && !slices.Contains(c.kinds, x.kind) ||
		c.kinds == nil && x.kind == "mute" || // drawn only where named: the worlds before it stay as they were
		c.victims != nil && x.actor != "" && x.kind != "lose" && x.kind != "mute" && !slices.Contains(c.victims, x.actor) ||
		x.kind == "mute" && c.muted != nil && !slices.Contains(c.muted, x.actor))
}

// eagerStep is the partial-order reduction: a process waiting at a step
// it may take at any time commutes with every action of the others
// (taking it only lets its next requests be sent; when they run is still
// anybody's choice), unless time may pass. So that step alone is
// explored, with the faults that strike that process there. w.mu is held.
func (w *world) eagerStep() []action {
	if w.canTick() || w.canExpire() {
		return nil
	}
	for _, a := range w.actors {
		if a.dead || a.done || a.atGate == "" || a.gateMin != 0 || a.gateMax != forever || a.gateAge != 0 || a.visible || !w.afterDone(a) {
			continue
		}
		out := []action{{kind: "step", actor: a.name}}
		if w.spent < w.cfg.faults && a.started {
			out = append(out, action{kind: "crash", actor: a.name})
			if a.holding != nil && !a.paused {
				out = append(out, action{kind: "pause", actor: a.name})
			}
		}
		return slices.DeleteFunc(out, w.cfg.excluded)
	}
	return nil
}

// sortedPending is w.pending in a fixed order.
func (w *world) sortedPending() []*request {
	rs := slices.Clone(w.pending)
	slices.SortFunc(rs, func(a, b *request) int {
		return strings.Compare(fmt.Sprintf("%d %s %4d", a.store, a.actor.name, a.k), fmt.Sprintf("%d %s %4d", b.store, b.actor.name, b.k))
	})
	return rs
}

// canTimeOut: a awaits answers, and each of them is lost or at a frozen
// store (a fault explains the silence).
func (w *world) canTimeOut(a *actor) bool {
	n := 0
	for _, r := range w.pending {
		if r.actor == a && r.awaited {
			if !r.lost && !w.frozen[r.store] {
				return false
			}
			n++
		}
	}
	return n > 0
}

// roundUnsent: a awaits its latest round, and no answer came since it
// was sent (so none of it has run).
func (w *world) roundUnsent(a *actor) bool {
	n := 0
	for _, r := range w.pending {
		if r.actor == a && r.awaited {
			if r.batch != a.batch || r.lost {
				return false
			}
			n++
		}
	}
	return n > 0
}

// canTick: time may pass when no request is in flight but at a frozen
// store (a request held back past a TTL is the freeze fault), every lease
// holder that is alive is paused, and some process can still act.
func (w *world) canTick() bool {
	return w.ticks < w.cfg.ticks && w.canPass()
}

// canExpire: a done marker's lifetime may pass (w.cfg.expiries times),
// on the terms of a tick.
func (w *world) canExpire() bool {
	return w.aged < w.cfg.expiries && w.canPass()
}

// gateOpen: a waits at a step it may take now. w.mu is held.
func (w *world) gateOpen(a *actor) bool {
	return a.atGate != "" && w.ticks >= a.gateMin && w.ticks <= a.gateMax && w.aged >= a.gateAge && w.afterDone(a)
}

// canPass: time may pass (a tick or an expiry). w.mu is held.
func (w *world) canPass() bool {
	if w.anyAwaited() || slices.ContainsFunc(w.pending, func(r *request) bool { return !w.frozen[r.store] && !r.lost }) {
		return false
	}
	busy := false
	for _, a := range w.actors {
		if a.dead || a.done {
			continue
		}
		if a.holding != nil && !a.paused {
			return false
		}
		busy = true
	}
	return busy
}

// canWipe: store i may restart empty once, and only when everything it
// holds is on both other stores (a majority keeps its data).
func (w *world) canWipe(i int) bool {
	if w.wiped || w.cfg.noWipe {
		return false
	}
	return w.othersHoldAll(i)
}

// othersHoldAll reports whether store i holds something and both other
// stores hold all of it: the guarantee's condition for a fault that loses
// what store i alone keeps (a restart empty, a stepped clock); w.mu is
// held.
func (w *world) othersHoldAll(i int) bool {
	mine := lines(w.stores[i].Snapshot())
	return len(mine) > 0 && w.onOthers(i, mine)
}

// onOthers reports whether both stores but i hold every line of ls;
// w.mu is held.
func (w *world) onOthers(i int, ls map[string]bool) bool {
	for j, s := range w.stores {
		if j == i {
			continue
		}
		theirs := lines(s.Snapshot())
		for l := range ls {
			if !theirs[l] {
				return false
			}
		}
	}
	return true
}

// lines is a snapshot's lines as a set.
func lines(snapshot string) map[string]bool {
	out := map[string]bool{}
	if snapshot == "" {
		return out
	}
	for _, l := range strings.Split(snapshot, "\n") {
		out[l] = true
	}
	return out
}
