package smallworld

import "slices"

// A stepped clock (fault "leap sN"): store N's wall clock steps a lock
// TTL forward, as a node whose time source steps it (a bad NTP server, a
// VM resumed from a snapshot). Its TIME and its keys' expiry move with it:
// every lease it holds ends at once there, its scripts judge every claim
// there expired, while the other stores keep the right time. Like a
// store restarted empty, it loses what only its clock kept alive, so the
// guarantee covers it when the other two hold everything it holds (one
// node's fault; docs/guarantees.md, "Clock drift"): the fault is drawn only
// then, once per path, and only in the worlds that name it. The e2e
// counterpart steps a real redis-server's clock (redistest.Node.StepClock,
// the scenario redis_clock_step).

// leapWorlds are the worlds of a stepped clock.
var leapWorlds = map[string]worldConfig{
	// Two replicas racing for the slot and a settler a TTL later; a
	// stepped clock and a crash at any step.
	"leap": {name: "leap", slots: 1, replicas: []string{"R1", "R2"}, settlers: []string{"S1"}, faults: 2,
		kinds: []string{"leap", "crash"}, ticks: 1},
	// The whole cast of the backfill world, a stepped clock of any store
	// at any time, and the first backfill killed between its steps.
	"castleap": {name: "castleap", slots: 1, settlers: []string{"S1"}, reconcilers: []string{"C1"}, backfills: []string{"B1", "B2"},
		faults: 2, kinds: []string{"leap", "crash"}, victims: []string{"B1"}, ticks: 3, expiries: 1, killAtSteps: true,
		at: map[string]int{"C1": 0, "B1": 1, "S1": 2, "B2": 3}},
	// The documented limit: a stepped clock whatever the store holds —
	// a claim on a bare majority, the stepped store one of its two, is
	// live on one store only.
	"leaplimit": {name: "leaplimit", slots: 1, replicas: []string{"R1", "R2"}, settlers: []string{"S1"}, faults: 1,
		kinds: []string{"leap"}, ticks: 1, leapAny: true},
}

func init() {
	for n, c := range leapWorlds {
		worlds[n] = c
	}
}

// canLeap: store i's clock may step once per path, when both other
// stores hold everything it holds (or, in a world of the limit, whatever
// it holds); w.mu is held.
func (w *world) canLeap(i int) bool {
	switch {
	case w.leapt || !w.cfg.leaps():
		return false
	case w.cfg.leapAny:
		return w.stores[i].Snapshot() != ""
	}
	return w.othersHoldAll(i)
}

// leaps reports whether the world draws stepped clocks.
func (c worldConfig) leaps() bool { return slices.Contains(c.kinds, "leap") }

// leap steps store i's clock a tick forward; w.mu is held.
func (w *world) leap(i int) {
	w.stores[i].StepClock(tickDur)
	w.leapt = true
}
