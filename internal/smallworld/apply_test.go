package smallworld

import (
	"slices"
	"time"
)

// apply takes action x; false when it is not possible now (a replayed
// schedule that no longer fits the code).
func (w *world) apply(x action) bool {
	w.mu.Lock()
	w.canonicalK()
	if isFault(x.kind) {
		if w.spent >= w.cfg.faults {
			w.mu.Unlock()
			return false
		}
		w.spent++
	}
	w.steps++
	var gate *actor
	ok := true
	switch x.kind {
	case "deliver", "lose", "mute":
		r := w.find(x.actor, x.store, x.k)
		if ok = r != nil && !r.lost && (x.kind == "lose" || !w.frozen[r.store]) && (x.kind != "mute" || r.awaited); ok {
			switch x.kind {
			case "deliver":
				w.deliver(r)
			case "mute":
				// Run now; the answer never comes: its sender times out.
				_, _ = w.applyTo(r.store, r.op)
				r.lost = true
			default:
				r.lost = true
				if !r.awaited {
					w.drop(r)
				}
			}
		}
	case "step":
		a := w.actor(x.actor)
		if ok = a != nil && !a.dead && w.gateOpen(a); ok {
			a.atGate, a.started = "", true
			a.steps++
			a.batch++
			gate = a
		}
	case "timeout":
		a := w.actor(x.actor)
		if ok = a != nil && w.canTimeOut(a); ok {
			w.timeOut(a)
		}
	case "crash", "crash0":
		a := w.actor(x.actor)
		if ok = a != nil && !a.dead && a.started && (x.kind == "crash" || w.roundUnsent(a)); ok {
			w.crash(a, x.kind == "crash0")
			if a.atGate != "" {
				a.atGate = ""
				defer func() { a.gateCh <- false }()
			}
		}
	case "pause":
		a := w.actor(x.actor)
		if ok = a != nil && !a.dead && a.holding != nil && !a.paused; ok {
			a.paused = true
			a.holding.lost = true
		}
	case "tick":
		if ok = w.canTick(); ok {
			w.ticks++
			for _, a := range w.actors {
				a.paused = false
			}
		}
	case "expire":
		// The done markers' lifetime passes; it is also more than a
		// lease's: a tick's worth for the gates.
		if ok = w.canExpire(); ok {
			w.aged++
			for _, a := range w.actors {
				a.paused = false
			}
		}
	case "thaw", "freeze":
		if ok = x.store < len(w.stores) && w.frozen[x.store] == (x.kind == "thaw") && (x.kind == "thaw" || !w.froze[x.store]); ok {
			w.frozen[x.store] = x.kind == "freeze"
			w.froze[x.store] = true
		}
	case "wipe":
		if ok = x.store < len(w.stores) && w.canWipe(x.store); ok {
			w.stores[x.store].Wipe()
			w.wiped = true
			w.before[x.store] = nil
		}
	case "failover":
		if ok = x.store < len(w.stores) && w.canFailover(x.store); ok {
			w.failover(x.store)
		}
	case "leap":
		if ok = x.store < len(w.stores) && w.canLeap(x.store); ok {
			w.leap(x.store)
		}
	default:
		ok = false
	}
	w.mu.Unlock()
	if gate != nil {
		gate.gateCh <- true
	}
	switch {
	case ok && x.kind == "tick":
		time.Sleep(tickDur)
	case ok && x.kind == "expire":
		time.Sleep(doneTTL + tickDur)
	}
	return ok
}

// crash kills a: it answers nothing more; what it sent may still run,
// except, with unsent, its latest round. w.mu is held.
func (w *world) crash(a *actor, unsent bool) {
	a.dead = true
	w.bodyEnded(a)
	if a.holding != nil {
		a.holding.lost = true
	}
	if a.claiming && a.claimTok != "" {
		// Lost while its claim was in flight: if the claim landed, its
		// holder is gone before it could confirm anything.
		w.lostClaims[a.claimTok[:16]] = true
	}
	for _, r := range slices.Clone(w.pending) {
		if r.actor != a || !r.awaited {
			continue
		}
		if unsent || r.lost {
			w.drop(r)
		}
		r.awaited = false
		r.reply <- reply{err: errDead}
	}
}
