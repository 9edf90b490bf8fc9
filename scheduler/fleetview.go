package scheduler

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"
)

// The fleet view: which replicas are alive and run this replica's job
// definitions, read from the heartbeats about once a beat. The loop
// (loop.go) ranks each slot's candidates over it.

// candidateView is the scheduler's view of the fleet that picks each
// slot's candidates: nil while unknown. viewAt is when it was read (the
// view loop's own); viewSource, when set (tests), replaces the read.
type candidateView struct {
	view       atomic.Pointer[fleetView]
	viewAt     time.Time
	viewSource func() []string
}

// fleetView is this replica's view of the live replicas: their names,
// sorted, this replica's among them.
type fleetView struct {
	names []string
}

// viewLoop keeps the view of the fleet until the scheduler stops: read
// every second during the first beat, so that replicas started together
// (a deploy, a scale-up) see each other's first heartbeats within a
// second — a replica missing from a view makes more candidates, each an
// extra claim per slot — then every Beat.
func (s *Scheduler) viewLoop() {
	start := s.clock.Now()
	for {
		s.refreshView()
		wait := s.cfg.Beat
		if s.clock.Now().Sub(start) < s.cfg.Beat {
			wait = min(time.Second, s.cfg.Beat)
		}
		if !s.sleep(wait, s.stopping) {
			return
		}
	}
}

// refreshView reads the fleet and replaces the view; when the stores do
// not answer, the view is kept while it is fresh (three beats), then
// dropped (every replica a candidate again).
func (s *Scheduler) refreshView() {
	now := s.clock.Now()
	names, err := s.readView(now)
	if err != nil {
		if v := s.view.Load(); v != nil && now.Sub(s.viewAt) > 3*s.cfg.Beat {
			s.view.Store(nil)
		}
		s.log.Debug("fleet view not read", "error", err.Error())
		return
	}
	if !slices.Contains(names, s.cfg.Replica) {
		names = append(names, s.cfg.Replica)
	}
	slices.Sort(names)
	s.view.Store(&fleetView{names: slices.Compact(names)})
	s.viewAt = now
}

// readView returns the names of the replicas alive at now that run this
// replica's job definitions: a replica with other definitions may not
// have the job, and choosing it as a candidate would cost its slots the
// fallback's delay.
func (s *Scheduler) readView(now time.Time) ([]string, error) {
	if s.viewSource != nil {
		return s.viewSource(), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	// Heartbeats older than three beats (of ours, or the default if
	// longer) name nobody alive: a replica beating slower than that only
	// falls out of the view, which costs its slots the fallback's delay.
	since := now.Add(-3 * max(s.cfg.Beat, history.DefaultBeat))
	alive, err := history.ReadAlive(ctx, s.cfg.Locker, since, now)
	if err != nil {
		return nil, err
	}
	hash := s.jobSet().hash
	var names []string
	for _, r := range alive {
		if r.DefinitionsHash == hash && r.Stopped.IsZero() {
			names = append(names, r.Replica)
		}
	}
	return names, nil
}
