package smallworld

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/redlock"
)

// An actor is one process of the world: a goroutine running a program
// (model_test.go) with a Redlock client of its own over the checker's
// network. Between two calls to the stores it stops at a step (gate), so
// that the explorer chooses when it moves on — or crashes there.
type actor struct {
	w      *world
	name   string
	locker locking.Locker

	// Guarded by w.mu.
	sent    []int    // requests sent, per store
	drawn   int      // random tokens drawn
	batch   int      // bumped by every answer and step
	obs     []string // what it was told, in order (its state, with steps)
	steps   int
	gateCh  chan bool
	atGate  string // the step it waits at, "" when none
	gateMin int    // the step may be taken from this tick on...
	gateMax int    // ...up to this one
	gateAge int    // ...once the done markers expired this many times (expire)
	started bool   // took its first step
	done    bool   // its program returned
	dead    bool
	paused  bool
	holding *grantRec // the lease it holds and has not ended
	// claiming: a Claim call is under way; claimTok its value's random
	// token, once sent.
	claiming bool
	claimTok string
	claims   int // Claim calls returned
	// A reload's worlds (reload_test.go): def is the definition a firer
	// fired its slot under; visible, that its waiting step is read by the
	// others (never taken eagerly); gateAfter, the firer whose slot must
	// be fired (or decided) before its own gate opens.
	def       string
	visible   bool
	gateAfter string
}

const (
	ttl       = 2 * time.Second
	opTimeout = 100 * time.Millisecond
	doneTTL   = 10 * ttl
	tickDur   = ttl + 100*time.Millisecond
	keep      = 100 // history.keep, unless the world says (worldConfig.keep)
	family    = "job"
	forever   = 1 << 30
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// newActor makes an actor with its own client; run starts its program.
func (w *world) newActor(name string) *actor {
	a := &actor{w: w, name: name, sent: make([]int, len(w.stores)), gateCh: make(chan bool)}
	nodes := make([]driver.Node, len(w.stores))
	for i := range nodes {
		nodes[i] = &node{w: w, a: a, store: i}
	}
	l, err := redlock.OnNodes(nodes, "sw", opTimeout, locking.Options{Replica: name, Clock: locking.SystemClock(w.clockOffset(name)), Logger: discard})
	if err != nil {
		panic(err)
	}
	a.locker = l
	w.mu.Lock()
	w.actors = append(w.actors, a)
	w.mu.Unlock()
	return a
}

func (a *actor) run(program func(*actor)) {
	go func() {
		defer func() {
			a.w.mu.Lock()
			a.done = true
			a.w.mu.Unlock()
		}()
		program(a)
	}()
}

// gate waits until the explorer lets a take the step named label (within
// ticks [min, max]); false when a crashed there, or the world closed.
func (a *actor) gate(label string, min, max int) bool {
	a.w.mu.Lock()
	if a.dead {
		a.w.mu.Unlock()
		return false
	}
	a.atGate, a.gateMin, a.gateMax, a.gateAge = label, min, max, 0
	a.w.mu.Unlock()
	return <-a.gateCh
}

// gateAt waits, as gate, for a step open from tick min on, once the done
// markers expired (the expire event) age times.
func (a *actor) gateAt(label string, min, age int) bool {
	a.w.mu.Lock()
	if a.dead {
		a.w.mu.Unlock()
		return false
	}
	a.atGate, a.gateMin, a.gateMax, a.gateAge = label, min, forever, age
	a.w.mu.Unlock()
	return <-a.gateCh
}

// first is the gate of a's first step: at the tick the world's config
// gives a (cfg.at), else within [min, max].
func (a *actor) first(label string, min, max int) bool {
	if t, ok := a.w.cfg.at[a.name]; ok {
		min, max = t, t
	}
	return a.gate(label, min, max)
}

// step is a gate open at any time.
func (a *actor) step(label string) bool { return a.gate(label, 0, forever) }

// claim is locking's Claim of slot, noted in the ledger when granted.
func (a *actor) claim(slot int) (*locking.Lease, error) { return a.claimWith(slot) }

// claimWith is claim with Claim's options (the job lease taken with it).
func (a *actor) claimWith(slot int, opts ...locking.ClaimOption) (*locking.Lease, error) {
	begin := a.w.clockStep()
	a.w.mu.Lock()
	a.claiming, a.claimTok = true, ""
	a.w.mu.Unlock()
	l, err := a.locker.Claim(context.Background(), slotKey(slot), ttl, opts...)
	a.w.mu.Lock()
	a.claiming = false
	a.claims++
	a.w.mu.Unlock()
	if err == nil {
		a.w.granted(a, slot, l, begin)
	}
	return l, err
}

// end is Lease.End; the lease is no longer held afterwards, whatever the
// stores said.
func (a *actor) end(l *locking.Lease, e locking.Ending) locking.Released {
	res := l.End(context.Background(), e)
	a.w.mu.Lock()
	a.holding = nil
	a.w.mu.Unlock()
	return res
}

func slotKey(slot int) locking.Key {
	return locking.Key{Family: family, Name: "slot:" + string(rune('0'+slot))}
}
