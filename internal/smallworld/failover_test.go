package smallworld

import (
	"fmt"
	"slices"

	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/locksim"
)

// A failover (fault "failover sN"): store N loses the last request that
// changed it, as a managed cache whose primary is lost and whose replica,
// promoted, had not received that write yet (replication is
// asynchronous). Unlike a restart empty, what the lost request deleted is
// back: an ended claim and its lease, an undone claim, a trimmed entry. The
// guarantee covers it when that write also reached both other stores (a
// majority keeps its data: docs/guarantees.md, "Failover in a managed
// cache"), so the fault is drawn only then, once per path, and only in
// the worlds that name it (the worlds before it stay as they were).

// failoverWorlds are the worlds of a failover.
var failoverWorlds = map[string]worldConfig{
	// Two replicas racing for the slot and a settler a TTL later; a
	// failover and a crash at any step.
	"failover": {name: "failover", slots: 1, replicas: []string{"R1", "R2"}, settlers: []string{"S1"}, faults: 2,
		kinds: []string{"failover", "crash"}, ticks: 1},
	// The whole cast on a slot every replica was down for (the backfill
	// world), the first backfill killed between its steps, and a
	// failover of any store at any time.
	"castfailover": {name: "castfailover", slots: 1, settlers: []string{"S1"}, reconcilers: []string{"C1"}, backfills: []string{"B1", "B2"},
		faults: 2, kinds: []string{"failover", "crash"}, victims: []string{"B1"}, ticks: 3, expiries: 1, killAtSteps: true,
		at: map[string]int{"C1": 0, "B1": 1, "S1": 2, "B2": 3}},
	// The documented limit: a failover whatever it lost, beside a lost
	// request — a write that reached a bare majority and is then lost on
	// one of its two stores is on one store only, and the next majority
	// may not see it (testdata/failover-bare-majority.limit).
	"failoverlimit": {name: "failoverlimit", slots: 1, replicas: []string{"R1", "R2"}, faults: 2,
		kinds: []string{"failover", "lose"}, ticks: 1, failoverAny: true},
}

func init() {
	for n, c := range failoverWorlds {
		worlds[n] = c
	}
}

// failovers reports whether the world draws failovers (its stores then
// keep their state before their last change).
func (c worldConfig) failovers() bool { return slices.Contains(c.kinds, "failover") }

// applyTo runs op on store i, keeping, in a world of failovers, the
// store's state before op when op changes it; w.mu is held.
func (w *world) applyTo(i int, op driver.Op) (res driver.Result, err error) {
	s := w.stores[i]
	if !w.cfg.failovers() || w.failed {
		return s.Apply(op)
	}
	prev := s.Clone()
	res, err = s.Apply(op)
	if s.Snapshot() != prev.Snapshot() {
		w.before[i] = prev
	}
	return res, err
}

// canFailover: store i may lose its last change once, when what that
// change wrote is on both other stores (or, in a world of the limit,
// whatever it wrote); w.mu is held.
func (w *world) canFailover(i int) bool {
	if w.failed || !w.cfg.failovers() || w.before[i] == nil {
		return false
	}
	if w.cfg.failoverAny {
		return true
	}
	lost := lines(w.stores[i].Snapshot())
	for l := range lines(w.before[i].Snapshot()) {
		delete(lost, l)
	}
	return w.onOthers(i, lost)
}

// failover makes store i lose its last change; w.mu is held.
func (w *world) failover(i int) {
	w.stores[i].Restore(w.before[i])
	w.before = make([]*locksim.Store, len(w.stores))
	w.failed = true
}

// beforeLines are the states a failover could restore, for the state key:
// two worlds alike but for them have different futures.
func (w *world) beforeLines() []string {
	var out []string
	for i, s := range w.before {
		if s == nil {
			continue
		}
		for l := range lines(s.Snapshot()) {
			out = append(out, fmt.Sprintf("before s%d %s", i, l))
		}
	}
	return out
}
