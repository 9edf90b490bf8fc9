package smallworld

import (
	"testing"
	"testing/cryptotest"
	"testing/synctest"
	"time"
)

// explorer enumerates a world's schedules depth first. Each branch is run
// again from the root (the processes are goroutines: their state cannot be
// copied), replaying the schedule that leads to it. Two reductions keep
// the branches few: a state seen before ends a branch, and sleep sets
// (independence.go) skip an action whose other order with the action
// just taken was explored already. A state is remembered with its sleep
// set: reached again with fewer actions asleep, the ones that were asleep
// then are explored from it now.
type explorer struct {
	t    *testing.T
	cfg  worldConfig
	seen map[[16]byte][]action // state -> the actions asleep when it was explored

	path   []action // the schedule being run
	frames []frame  // per depth: the actions explored from there
	sleep  []action // asleep at the end of path

	// Figures.
	runs, terminals, pruned, maxDepth int
	unreported                        int      // terminal states with a run no line reports (checkUnreported)
	unreportedPath                    []action // the shortest schedule to one
	failedOver                        int      // terminal states after a failover (failover_test.go)
	leapt                             int      // terminal states after a stepped clock (leap_test.go)
	began                             time.Time
	cut                               float64 // stopped by -check.time: the share explored by then
	finished                          bool
	found                             map[string]*counterexample
	order                             []string // classes, in the order found
}

type frame struct {
	alts  []action
	next  int
	sleep []action   // asleep at this depth
	child [][]action // asleep after taking each of alts
}

// counterexample is the shortest schedule found breaking an invariant of
// one class, and how many terminal states broke it.
type counterexample struct {
	v     violation
	path  []action
	count int
}

func newExplorer(t *testing.T, cfg worldConfig) *explorer {
	return &explorer{t: t, cfg: cfg, seen: map[[16]byte][]action{}, found: map[string]*counterexample{}, began: time.Now()}
}

// start makes every branch begin with prefix: its depths have no other
// action to try.
func (x *explorer) start(prefix []action) {
	x.path = append([]action(nil), prefix...)
	for _, a := range prefix {
		x.frames = append(x.frames, frame{alts: []action{a}, child: [][]action{nil}})
	}
}

// explore runs every branch, or those it has time for (-check.time).
func (x *explorer) explore() {
	for {
		x.runBranch()
		if x.runs%20000 == 0 {
			x.t.Logf("... %s", x.summary())
		}
		if *checkTime > 0 && time.Since(x.began) > *checkTime {
			x.cut = x.explored()
		}
		if x.cut > 0 {
			return
		}
		if !x.backtrack() {
			x.finished = true
			return
		}
	}
}

// explored estimates the share of the schedule tree explored so far, as
// a depth-first search measures it: the alternatives done at each depth,
// each weighing as much as its siblings (subtrees differ in size, and
// states seen before end many: an estimate, not a count).
func (x *explorer) explored() float64 {
	share, weight := 0.0, 1.0
	for _, f := range x.frames {
		n := float64(len(f.alts))
		share += weight * float64(f.next) / n
		weight /= n
	}
	return share
}

// backtrack moves to the next untried action of the deepest frame that
// has one; false when none is left.
func (x *explorer) backtrack() bool {
	for len(x.frames) > 0 {
		f := &x.frames[len(x.frames)-1]
		f.next++
		if f.next < len(f.alts) {
			x.path = append(x.path[:len(x.frames)-1], f.alts[f.next])
			x.sleep = f.child[f.next]
			return true
		}
		x.frames = x.frames[:len(x.frames)-1]
	}
	return false
}

// runBranch replays x.path from the root, then goes on taking the first
// possible action until a state seen before or a terminal state.
func (x *explorer) runBranch() {
	x.runs++
	synctest.Test(x.t, func(t *testing.T) {
		cryptotest.SetGlobalRandom(t, 1)
		w := newWorld(x.cfg)
		defer w.end()
		synctest.Wait()
		for _, a := range x.path {
			if !w.apply(a) {
				t.Fatalf("schedule %v: %v is not possible: the world is not deterministic", x.path, a)
			}
			synctest.Wait()
		}
		for {
			acts, terminal := x.visit(w)
			if terminal {
				x.terminal(w)
			}
			if len(acts) == 0 {
				return
			}
			f := frame{alts: acts, sleep: x.sleep}
			f.child = w.sleeps(&f)
			x.frames = append(x.frames, f)
			x.path = append(x.path, acts[0])
			x.sleep = f.child[0]
			x.maxDepth = max(x.maxDepth, len(x.path))
			w.apply(acts[0])
			synctest.Wait()
		}
	})
}

// visit returns the actions to explore from w's state with x.sleep
// asleep: the enabled ones not asleep on a first visit; on a later one,
// those that were asleep then and are not now (none: the branch ends).
// terminal: a first visit to a state with no action possible.
func (x *explorer) visit(w *world) (acts []action, terminal bool) {
	k, r := w.stateKey()
	enabled := w.enabled()
	asleep := r.actions(x.sleep, false) // in the key's names
	before, seen := x.seen[k]
	if !seen {
		x.seen[k] = asleep
		return without(enabled, x.sleep), len(enabled) == 0
	}
	awake := without(before, asleep)
	x.seen[k] = without(before, awake)
	if len(awake) == 0 {
		x.pruned++
	}
	return intersect(enabled, r.actions(awake, true)), false
}

// terminal closes w and records what it breaks.
func (x *explorer) terminal(w *world) {
	x.terminals++
	w.close()
	vs := w.violations()
	if w.failed {
		x.failedOver++
	}
	if w.leapt {
		x.leapt++
	}
	if w.unreported > 0 {
		x.unreported++
		if x.unreportedPath == nil || len(x.path) < len(x.unreportedPath) {
			x.unreportedPath = append([]action(nil), x.path...)
		}
	}
	for _, v := range vs {
		c := x.found[v.class]
		if c == nil {
			c = &counterexample{v: v, path: append([]action(nil), x.path...)}
			x.found[v.class] = c
			x.order = append(x.order, v.class)
			x.t.Logf("found %s after %d branches: %s\n%s", v.class, x.runs, v.detail, traceText(x.cfg, c.path))
		} else if len(x.path) < len(c.path) {
			c.v, c.path = v, append([]action(nil), x.path...)
		}
		c.count++
	}
}
