package scheduler

import (
	"context"
	"slices"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"
)

// The fleet view: which replicas are alive and run this replica's job
// definitions, read from the heartbeats about once a beat. The loop
// (timer.go) ranks each slot's candidates over it.

// fleetView is this replica's view of the live replicas: their names,
// sorted, this replica's among them at self, and each name's seed
// (replicaSeed), hashed once per view so that ranking a slot hashes no
// name (slot_ranks.go).
type fleetView struct {
	names []string
	seeds []uint64
	self  int
}

func newFleetView(names []string, self string) *fleetView {
	v := &fleetView{names: names, seeds: make([]uint64, len(names)), self: slices.Index(names, self)}
	for i, n := range names {
		v.seeds[i] = replicaSeed(n)
	}
	return v
}

// viewLoop keeps the view of the fleet (and checks that no other process
// runs under this replica's name: namecheck.go) until the scheduler
// stops: read
// every second during the first beat, so that replicas started together
// (a deploy, a scale-up) see each other's first heartbeats within a
// second — a replica missing from a view makes more candidates, each an
// extra claim per slot — then every Beat.
func (f *fleet) viewLoop() {
	start := f.clock.Now()
	for {
		f.refreshView()
		wait := f.cfg.Beat
		if f.clock.Now().Sub(start) < f.cfg.Beat {
			wait = min(time.Second, f.cfg.Beat)
		}
		if !f.sleep(wait, f.stopping) {
			return
		}
	}
}

// refreshView reads the fleet and replaces the view; when the stores do
// not answer, the view is kept while it is fresh (three beats), then
// dropped (every replica a candidate again).
func (f *fleet) refreshView() {
	now := f.clock.Now()
	names, err := f.readView(now)
	if err != nil {
		if v := f.view.Load(); v != nil && now.Sub(f.viewAt) > 3*f.cfg.Beat {
			f.view.Store(nil)
		}
		f.log.Debug("fleet view not read", "error", err.Error())
		return
	}
	if !slices.Contains(names, f.cfg.Replica) {
		names = append(names, f.cfg.Replica)
	}
	slices.Sort(names)
	f.view.Store(newFleetView(slices.Compact(names), f.cfg.Replica))
	f.viewAt = now
}

// readView returns the names of the replicas alive at now that run this
// replica's job definitions: a replica with other definitions may not
// have the job, and choosing it as a candidate would cost its slots the
// fallback's delay.
func (f *fleet) readView(now time.Time) ([]string, error) {
	if f.viewSource != nil {
		return f.viewSource(), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	// Heartbeats older than three beats (of ours, or the default if
	// longer) name nobody alive: a replica beating slower than that only
	// falls out of the view, which costs its slots the fallback's delay.
	since := now.Add(-3 * max(f.cfg.Beat, history.DefaultBeat))
	alive, err := history.ReadAlive(ctx, f.cfg.Locker, since, now)
	if err != nil {
		return nil, err
	}
	f.checkName(alive, now)
	hash := f.jobSet().hash
	var names []string
	for _, r := range alive {
		if r.DefinitionsHash == hash && r.Stopped.IsZero() {
			names = append(names, r.Replica)
		}
	}
	return names, nil
}
