package smallworld

import (
	"context"
	"fmt"
	"slices"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/locksim"
	"github.com/slotlock/slotlock/locking/redlock"
)

// A read that misses one node. Every read of the history is answered by a
// majority, and any majority may be the one that answers: a reconciler's
// read while one node is slow, a backfill's while one is down. So the
// outcome of a slot whose body ran must stand on every majority, not only
// on the union of the three stores the final read sees: read without any
// one store, its entries' join must still say the body ran or may have
// run (not backfillable), or that reader would report it missed and a
// backfill would run it again. Checked at the end, for each store left
// out: the worst moment for the read that misses it, since the history
// only grows once the world has come to rest.

// directNode is a store as one node of its own, asked without the
// checker's network: the end's reads of each store.
type directNode struct{ s *locksim.Store }

func (n directNode) Addr() string { return n.s.Name() }
func (n directNode) Close() error { return nil }
func (n directNode) Do(_ context.Context, op driver.Op) (driver.Result, error) {
	return n.s.Apply(op)
}

// storeLogs reads slot's entries on each store alone, in the order the
// stores' merge gives them.
func (w *world) storeLogs(slot int) [][]string {
	out := make([][]string, len(w.stores))
	for i, s := range w.stores {
		l, err := redlock.OnNodes([]driver.Node{directNode{s}}, "sw", opTimeout, locking.Options{Replica: "end", Clock: locking.SystemClock(0), Logger: discard})
		if err != nil {
			panic(err)
		}
		log, err := l.ReadLog(context.Background(), family, int64(slot+1), w.readLimit())
		if err != nil {
			panic(err)
		}
		for _, e := range log {
			if e.Score == int64(slot+1) {
				out[i] = append(out[i], e.Value)
			}
		}
		_ = l.Close()
	}
	return out
}

// judgedMissed reports whether some store holds a plain missed entry of
// slot (the reconciler's or a backfill's verdict).
func (w *world) judgedMissed(slot int) bool {
	for _, l := range w.storeLogs(slot) {
		if slices.ContainsFunc(l, func(v string) bool { return kindOf(v) == outMissed }) {
			return true
		}
	}
	return false
}

// checkMajorities: a slot whose body started has, on every majority of
// the stores, entries whose join a backfill refuses. w.mu is held; the
// stores' logs (w.logs) were read at the end.
func (w *world) checkMajorities(slot int, runs []runRec) []violation {
	logs := w.logs[slot]
	if len(runs) == 0 || len(logs) == 0 || w.trimmed[slot] {
		return nil
	}
	var out []violation
	for miss := range logs {
		var read [][]locking.LogEntry
		for i, l := range logs {
			if i == miss {
				continue
			}
			var es []locking.LogEntry
			for _, v := range l {
				es = append(es, locking.LogEntry{Score: int64(slot + 1), Value: v})
			}
			read = append(read, es)
		}
		var union []string
		for _, e := range driver.MergeLogs(read, w.readLimit()) {
			union = append(union, e.Value)
		}
		if e, found := joinOf(union); backfillable(e, found) {
			out = append(out, violation{"outcome-on-a-minority", fmt.Sprintf("slot %d started (%v); a read that misses s%d gets %q: backfillable (entries per store: %q)",
				slot, runs, miss, union, logs)})
		}
	}
	return out
}
