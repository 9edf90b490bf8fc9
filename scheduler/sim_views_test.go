package scheduler_test

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"testing"
	"time"
)

// The candidates under disagreeing views: every replica draws its view of
// the fleet at random at every refresh (about once a beat) — a random
// subset of the replicas, often without itself (the scheduler adds it
// back) and so missing from the others' views, with replicas that never
// run listed as alive — and the views change over time. Which replicas
// try a slot at its due time then differs from one replica to the next:
// sometimes none of its candidates is alive, sometimes a replica counts
// itself a candidate for a slot of which every other counts it a
// fallback. Exactly-once does not depend on the choice: the invariants
// of the simulation (no slot run twice, every slot one honest outcome)
// hold as they do with the heartbeats' views.
//
//	go test ./scheduler -run SimulationViews -sim.hours 24
func TestSimulationViews(t *testing.T) {
	seeds := []uint64{424242, 90501} // an even seed (ttl 8s) and an odd one (1.5s)
	if *simSeed != 0 {
		seeds = []uint64{*simSeed}
	}
	hours := time.Duration(*simHours * float64(time.Hour))
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			t.Parallel() // worlds of their own, as TestSimulation's seeds
			simulate(t, simConfig{seed: seed, duration: hours, replicas: 4, stores: 3,
				ttl: simTTL(seed), skew: time.Second, faultGap: 90 * time.Second, views: true})
		})
	}
}

// simGhosts are replicas listed in views that never run.
var simGhosts = []string{"ghost-a", "ghost-b"}

// simView is a view of the fleet drawn by process name's epoch: each
// replica and ghost in it with probability 2/3, drawn from the seed, the
// process and the virtual instant of the refresh — a pure function of
// them, so that a replay draws the same views whichever of the process's
// goroutines asks first.
func (w *world) simView(name string, epoch int) []string {
	at := time.Now().UnixNano()
	in := func(member string) bool {
		h := fnv.New64a()
		fmt.Fprintf(h, "%s|%d|%d|%s", name, epoch, at, member)
		return rand.New(rand.NewPCG(w.cfg.seed, h.Sum64())).IntN(3) > 0
	}
	var names []string
	for _, r := range w.reps {
		if in(r.name) {
			names = append(names, r.name)
		}
	}
	for _, g := range simGhosts {
		if in(g) {
			names = append(names, g)
		}
	}
	return names
}
