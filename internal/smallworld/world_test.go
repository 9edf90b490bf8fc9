package smallworld

import (
	"fmt"
	"sync"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/locksim"
)

// worldConfig is a small world: its processes, slots, fault budget and
// how often time may pass.
type worldConfig struct {
	name     string
	slots    int      // slots of the one job; replicas fire slot i at tick i
	replicas []string // processes firing every slot
	settlers []string // processes pointed at slot 0's abandoned claim, at tick 1
	// The rest of the cast (cast_test.go), each on slot 0: backfills (the
	// n-th, from 0, starts once the done markers expired n times), the
	// reconciler's passes and start-up probes (each at any time).
	backfills   []string
	reconcilers []string
	probes      []string
	pausers     []string // pause the job, then resume it (names start with U)
	// A reload (reload_test.go): firers[i] fires slot i alone, under the
	// definition in force then; reloaders switch it from allow to forbid.
	firers    []string
	reloaders []string
	fastFire  bool // slot i+1 fired once slot i was, not once its claim is decided
	// at: the tick an actor's first step waits for (its program's own
	// when absent): the phases of a world whose actors come one after the
	// other, as an operator's backfill comes after the reconciler's pass.
	at map[string]int
	// backfillAge: the done markers expire this many times before the
	// first backfill starts (a slot a probe closed is done until then).
	backfillAge int
	// keep: history.keep, each store's entries of the job (0: keep).
	keep     int
	faults   int      // the fault budget of a path
	kinds    []string // the faults drawn (nil: all)
	victims  []string // the processes that may crash or pause (nil: all)
	muted    []string // the processes whose answers may be lost (mute; nil: all)
	ticks    int      // how many times time may pass (one lock TTL each)
	expiries int      // how many times the done markers' lifetime may pass (expire)
	noWipe   bool
	// failoverAny: a failover may lose a write that is not on both other
	// stores (outside the guarantee: the world of its documented limit).
	failoverAny bool
	// leapAny: a store's clock may step whatever it holds (outside the
	// guarantee: the world of its documented limit; leap_test.go).
	leapAny bool
	// killAtSteps: a process crashes only between its steps (at a gate),
	// not while its requests are in flight: a world of whole steps.
	killAtSteps bool
}

var worlds = map[string]worldConfig{
	// The default world, in CI: one slot, a replica firing it, a settler
	// pointed at it a TTL later; one fault of any kind per path.
	"default": {name: "default", slots: 1, replicas: []string{"R1"}, settlers: []string{"S1"}, faults: 1, ticks: 1},
	// The bigger world: two faults of any kind per path.
	"big": {name: "big", slots: 1, replicas: []string{"R1"}, settlers: []string{"S1"}, faults: 2, ticks: 1},
	// Three faults of any kind per path.
	"big3": {name: "big3", slots: 1, replicas: []string{"R1"}, settlers: []string{"S1"}, faults: 3, ticks: 1},
	// Two replicas racing for the slot, one fault of any kind.
	"race": {name: "race", slots: 1, replicas: []string{"R1", "R2"}, settlers: []string{"S1"}, faults: 1, ticks: 1},
	// Two replicas and two settlers at once (issue #21's bug 2 needs
	// them), the replicas crashing at any step.
	"settlers": {name: "settlers", slots: 1, replicas: []string{"R1", "R2"}, settlers: []string{"S1", "S2"}, faults: 1, ticks: 1,
		kinds: []string{"crash", "crash0"}, victims: []string{"R1", "R2"}},
	// One replica, two settlers at once, one fault of any kind.
	"pair": {name: "pair", slots: 1, replicas: []string{"R1"}, settlers: []string{"S1", "S2"}, faults: 1, ticks: 1},
	// Two slots: the replica fires slot 1 a TTL after slot 0, and its
	// claim points to slot 0's abandoned claim (Grant.Orphan).
	"twoslots": {name: "twoslots", slots: 2, replicas: []string{"R1"}, settlers: []string{"S1"}, faults: 1, ticks: 1},
	// No fault: the protocol's interleavings alone.
	"nofault": {name: "nofault", slots: 1, replicas: []string{"R1", "R2"}, settlers: []string{"S1", "S2"}, ticks: 1},
}

// world is one execution of a small world, inside a synctest bubble.
type world struct {
	cfg    worldConfig
	stores []*locksim.Store

	mu      sync.Mutex
	actors  []*actor
	pending []*request
	tokens  map[string]string // random token -> who drew it
	steps   int               // actions taken
	ticks   int
	aged    int // expiries taken
	spent   int // faults
	frozen  []bool
	froze   []bool // frozen once already
	wiped   bool
	// before: each store's state before its last change, in a world of
	// failovers (failover_test.go); failed: a failover was taken.
	before  []*locksim.Store
	failed  bool
	leapt   bool // a store's clock stepped (leap_test.go)
	closing bool
	forbid  bool // reloaded: the job runs under overlap forbid

	// The ledger: what the jobs saw and the processes reported.
	grants  []*grantRec
	runs    []runRec
	bodies  []*bodyRec
	reports []reportRec
	final   map[int][]string   // history entries per slot, read at the end
	logs    map[int][][]string // history entries per slot and store, read at the end
	// trimmed: slots the history no longer reaches at the end (history.keep
	// newer entries): their lack of an entry tells nothing.
	trimmed map[int]bool
	open    map[int]bool // slots with an open claim at the end
	// unreported: runs no line reports (checkUnreported), at the end.
	unreported int
	// lostClaims: the run ids (locking's lease id: the token's first 16
	// characters) of claims whose claimer crashed during its Claim call.
	lostClaims map[string]bool
}

// grantRec is a Claim granted: its token, when the call began and ended
// (in actions), and whether its holder was lost (crashed or paused) while
// it held the lease.
type grantRec struct {
	actor      string
	slot       int
	id         string
	token      uint64
	begin, end int
	lost       bool
	taken      bool // it took over an abandoned claim
}

// runRec is a body invoked: what the job saw.
type runRec struct {
	actor, id string
	slot      int
	token     uint64
	// afterMissed: when the body began, some store held a plain missed
	// entry of the slot (a backfill recovering a slot judged missed).
	afterMissed bool
}

// bodyRec is a body's time: from the action that began it to the one
// that ended it (its end step, or its process's death; -1 while it
// runs), and the overlap policy it ran under (def: "" outside a reload's
// worlds).
type bodyRec struct {
	actor, def string
	slot       int
	begin, end int
}

// reportRec is an audit line: run.abandoned, slot.missed, succeeded,
// skipped, stalled.
type reportRec struct {
	actor, kind string
	slot        int
	detail      string
	// early: runs of the slot that began before the report with no
	// missed entry of it on any store (runAfterMissed).
	early int
}

func newWorld(cfg worldConfig) *world {
	w := &world{cfg: cfg, tokens: map[string]string{}, frozen: make([]bool, 3), froze: make([]bool, 3), before: make([]*locksim.Store, 3),
		final: map[int][]string{}, logs: map[int][][]string{}, trimmed: map[int]bool{}, open: map[int]bool{}, lostClaims: map[string]bool{}}
	for i := range 3 {
		w.stores = append(w.stores, locksim.NewStore(fmt.Sprintf("s%d", i)))
	}
	for _, n := range cfg.replicas {
		w.newActor(n).run(replica)
	}
	for _, n := range cfg.settlers {
		w.newActor(n).run(settler)
	}
	for _, n := range cfg.reconcilers {
		w.newActor(n).run(reconciler)
	}
	for _, n := range cfg.probes {
		w.newActor(n).run(probe)
	}
	for _, n := range cfg.pausers {
		w.newActor(n).run(pauser)
	}
	for i, n := range cfg.backfills {
		w.newActor(n).run(backfill(i))
	}
	for i, n := range cfg.firers {
		w.newActor(n).run(firer(i))
	}
	for _, n := range cfg.reloaders {
		w.newActor(n).run(reloader)
	}
	return w
}

// keep is the world's history.keep.
func (w *world) keep() int {
	if w.cfg.keep > 0 {
		return w.cfg.keep
	}
	return keep
}

// readLimit is the scheduler's historyReadLimit: a read of the log asks
// for what the union of a majority may hold.
func (w *world) readLimit() int { return 2*w.keep() + 64 }

func (w *world) clockStep() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.steps
}

func (w *world) granted(a *actor, slot int, l *locking.Lease, begin int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	g := &grantRec{actor: a.name, slot: slot, id: l.Grant().ID, token: l.Token(), begin: begin, end: w.steps, taken: l.Grant().Abandoned != nil}
	w.grants = append(w.grants, g)
	a.holding = g
}

func (w *world) started(a *actor, slot int, l *locking.Lease) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.runs = append(w.runs, runRec{actor: a.name, id: l.Grant().ID, slot: slot, token: l.Token(), afterMissed: w.judgedMissed(slot)})
	w.bodies = append(w.bodies, &bodyRec{actor: a.name, slot: slot, def: a.def, begin: w.steps, end: -1})
}

// bodyEnded: a's body returned (or a died). w.mu is held.
func (w *world) bodyEnded(a *actor) {
	for _, b := range w.bodies {
		if b.actor == a.name && b.end < 0 {
			b.end = w.steps
		}
	}
}

func (w *world) report(a *actor, kind string, slot int, detail string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	early := 0
	for _, r := range w.runs {
		if r.slot == slot && !r.afterMissed {
			early++
		}
	}
	w.reports = append(w.reports, reportRec{actor: a.name, kind: kind, slot: slot, detail: detail, early: early})
}

func (w *world) actor(name string) *actor {
	for _, a := range w.actors {
		if a.name == name {
			return a
		}
	}
	return nil
}

// The worlds of the whole cast: every replica was down at slot 0, and the
// actors that write its outcome afterwards meet there.
var castWorlds = map[string]worldConfig{
	// Issue #33's bug 1: the reconciler's pass judges the slot, a backfill
	// claims and starts it and may be killed at any step, a settler is
	// pointed at its claim a TTL later, the done markers expire, and a
	// second backfill plans the slot.
	"backfill": {name: "backfill", slots: 1, settlers: []string{"S1"}, reconcilers: []string{"C1"}, backfills: []string{"B1", "B2"},
		faults: 1, kinds: []string{"crash"}, victims: []string{"B1"}, ticks: 3, expiries: 1, killAtSteps: true,
		at: map[string]int{"C1": 0, "B1": 1, "S1": 2, "B2": 3}},
	// The reconciler's pass and a backfill at the same time: the pass may
	// read the claims just before the backfill claims the slot, and must
	// not then report missed a slot whose run began (the backfill judges
	// a slot with no entry itself first); the backfill killed at any step.
	"judgerace": {name: "judgerace", slots: 1, settlers: []string{"S1"}, reconcilers: []string{"C1"}, backfills: []string{"B1"},
		faults: 1, kinds: []string{"crash"}, victims: []string{"B1"}, ticks: 2, expiries: 1, killAtSteps: true,
		at: map[string]int{"C1": 0, "B1": 0, "S1": 1}},
	// The same with the start-up probe's skipped/late entry in place of
	// the reconciler's missed.
	"probe": {name: "probe", slots: 1, settlers: []string{"S1"}, probes: []string{"P1"}, backfills: []string{"B1", "B2"},
		faults: 1, kinds: []string{"crash"}, victims: []string{"B1"}, ticks: 3, expiries: 2, killAtSteps: true, backfillAge: 1,
		at: map[string]int{"P1": 0, "B1": 1, "S1": 2, "B2": 3}},
	// Issue #33's bug 2: a replica's run with four faults among lost
	// requests and the replica's death between its steps; the close
	// settles what is left once the done markers expired, and the history
	// is read, for the invariants, also without each one store.
	"minority": {name: "minority", slots: 1, replicas: []string{"R1"}, faults: 4, kinds: []string{"lose", "crash"},
		victims: []string{"R1"}, ticks: 1, killAtSteps: true},
	// The backfill world with two faults: lost requests, and the first
	// backfill and the settler killed between their steps.
	"cast2": {name: "cast2", slots: 1, settlers: []string{"S1"}, reconcilers: []string{"C1"}, backfills: []string{"B1", "B2"},
		faults: 2, kinds: []string{"crash", "lose"}, victims: []string{"B1", "S1"}, ticks: 3, expiries: 1, killAtSteps: true,
		at: map[string]int{"C1": 0, "B1": 1, "S1": 2, "B2": 3}},
	// And with three, of every kind but a store restarted empty.
	"cast3": {name: "cast3", slots: 1, settlers: []string{"S1"}, reconcilers: []string{"C1"}, backfills: []string{"B1", "B2"},
		faults: 3, kinds: []string{"crash", "crash0", "lose", "freeze", "pause"}, victims: []string{"B1", "S1"}, ticks: 3, expiries: 1,
		at: map[string]int{"C1": 0, "B1": 1, "S1": 2, "B2": 3}},
	// History trim at history.keep: each store keeps one entry, so slot
	// 1's end trims slot 0's; a backfill of slot 0 comes after the done
	// markers expired, and must not take the missing entry for "not run".
	"trim": {name: "trim", slots: 2, replicas: []string{"R1"}, backfills: []string{"B1"}, keep: 1,
		faults: 1, kinds: []string{"crash", "lose"}, victims: []string{"R1"}, ticks: 1, expiries: 1, killAtSteps: true,
		at: map[string]int{"B1": 1}},
	// A pause and a resume beside a replica firing the slot and a
	// settler, the reconciler's pass a TTL later; the replica or the
	// pauser killed between steps.
	"pause": {name: "pause", slots: 1, replicas: []string{"R1"}, settlers: []string{"S1"}, pausers: []string{"U1"},
		reconcilers: []string{"C1"}, faults: 1, kinds: []string{"crash"}, victims: []string{"R1", "U1"}, ticks: 1,
		killAtSteps: true, at: map[string]int{"C1": 1}},
	// The same with lost requests too (a pause or resume that reached
	// some stores only).
	"pauselose": {name: "pauselose", slots: 1, replicas: []string{"R1"}, settlers: []string{"S1"}, pausers: []string{"U1"},
		reconcilers: []string{"C1"}, faults: 1, kinds: []string{"crash", "lose"}, victims: []string{"R1", "U1"}, ticks: 1,
		killAtSteps: true, at: map[string]int{"C1": 1}},
}

func init() {
	for n, c := range castWorlds {
		worlds[n] = c
	}
}
