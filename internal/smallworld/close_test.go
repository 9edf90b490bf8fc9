package smallworld

import (
	"slices"
	"testing/synctest"
	"time"
)

// close brings a terminal world to rest as the product does once its
// faults are over: the leases expire, a settler takes whatever claim is
// left and a reconciler judges every slot; then again once the done
// markers have expired; then the history is read. Nothing is chosen here:
// every request runs at once, in a fixed order.
func (w *world) close() {
	w.shutdown(false)
	time.Sleep(tickDur)
	w.heal()
	w.autoRun("z1", settleAll)
	w.autoRun("rc1", reconciler)
	time.Sleep(doneTTL + tickDur)
	w.heal()
	w.autoRun("z2", settleAll)
	w.autoRun("rc2", reconciler)
	w.autoRun("fin", finalRead)
}

// heal runs on their stores the requests in flight that are not lost —
// the undos a locker re-sent in the background (undoLater) while time
// passed: the network works again, and they reach their stores.
func (w *world) heal() {
	synctest.Wait()
	w.mu.Lock()
	for _, r := range w.sortedPending() {
		if !r.lost {
			w.frozen[r.store] = false
			w.deliver(r)
		}
	}
	w.mu.Unlock()
	synctest.Wait()
}

// settleAll settles every slot, as processes pointed at each would.
func settleAll(a *actor) {
	for slot := range a.w.cfg.slots {
		if !a.step("settle") {
			return
		}
		a.settleOrphan(slot)
	}
}

// autoRun runs a new process to its end, every request delivered at once.
func (w *world) autoRun(name string, program func(*actor)) {
	a := w.newActor(name)
	a.run(program)
	for {
		synctest.Wait()
		next := false
		for _, x := range w.enabled() {
			if (x.kind == "deliver" || x.kind == "step") && x.actor == name {
				w.apply(x)
				next = true
				break
			}
		}
		if !next {
			return
		}
	}
}

// end kills every process and closes its locker, as a process's exit
// does: the undos its locker still sends in the background (locking's
// undoLater) stop there, and the bubble's goroutines all return.
func (w *world) end() {
	w.shutdown(true)
	synctest.Wait()
	w.mu.Lock() // after each program's last write of a.done: its calls happened before the Close
	actors := slices.Clone(w.actors)
	w.mu.Unlock()
	for _, a := range actors {
		_ = a.locker.Close()
	}
}

// shutdown ends every process still waiting (kill: in flight too), so
// that the bubble's goroutines all return.
func (w *world) shutdown(kill bool) {
	for {
		synctest.Wait()
		w.mu.Lock()
		var gates []*actor
		for _, a := range w.actors {
			if a.done {
				continue
			}
			if kill && !a.dead {
				w.crash(a, false)
			}
			if a.atGate != "" {
				a.atGate, a.dead = "", true
				gates = append(gates, a)
			}
		}
		w.mu.Unlock()
		if len(gates) == 0 {
			return
		}
		for _, a := range gates {
			a.gateCh <- false
		}
	}
}
