package scheduler

import (
	"context"
	"slices"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"
)

// The heartbeat: every replica publishes who it is, which build and job
// definitions it runs and what it is running now, every Config.Beat, and
// the outages of the lock stores it saw, in the fleet log
// (history.FleetFamily; history.ReadFleet reads them back). `slotlock
// status` shows the replicas alive; the reconciler asks whether anybody
// was alive, or the stores down, when a slot was missed.

// beatLoop publishes this replica's heartbeat every Beat until the
// scheduler stops. The heartbeat follows reloads: it names the definitions
// in force at each beat.
func (s *Scheduler) beatLoop(started time.Time) {
	instance := s.instanceID()
	prevRuns := ""
	var published *defs // the job set last published (publishDefinitions)
	sincePublished := 0 // beats since
	for {
		d := s.jobSet()
		info := history.ReplicaInfo{Replica: s.cfg.Replica, Instance: instance,
			Version: s.cfg.Version, DefinitionsHash: d.hash, DefinitionsSince: d.since.UTC(), Started: started.UTC(),
			Beat: s.cfg.Beat.String(), Jobs: len(d.order)}
		prevRuns = s.beat(info, prevRuns)
		if sincePublished++; d != published || sincePublished >= republishBeats {
			if s.publishDefinitions(d) {
				published, sincePublished = d, 0
			}
		}
		if !s.sleep(s.cfg.Beat, s.stopping) {
			// A last heartbeat says it: the others drop this replica from
			// their candidates (loop.go, fleetview.go) at their next look.
			info.Stopped = s.clock.Now().UTC()
			s.beat(info, prevRuns)
			return
		}
	}
}

// beat writes one heartbeat (info, scored now) and the list of runs going
// on in place of prevRuns; it returns the list it wrote (prevRuns again
// when the stores did not take it).
func (s *Scheduler) beat(info history.ReplicaInfo, prevRuns string) string {
	now := s.clock.Now()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	err := s.cfg.Locker.AppendLog(ctx, history.FleetFamily, info.Append(now))
	if err != nil {
		s.log.Debug("heartbeat not written", "error", err.Error())
		return prevRuns
	}
	running := s.runningNow()
	if len(running) == 0 && prevRuns == "" {
		return ""
	}
	runs := history.RunsAppend(info.Instance, running, prevRuns, now, s.cfg.Beat)
	err = s.cfg.Locker.AppendLog(ctx, history.RunsFamily, runs)
	if err != nil {
		return prevRuns
	}
	if len(running) == 0 {
		return "" // the empty list replaced the last one; nothing to replace next time
	}
	return runs.Entry.Value
}

// republishBeats is how many beats apart a replica publishes its job
// definitions again when they have not changed: often enough that a
// store that came back empty has them again within minutes, and that
// they outlive the log's floor (history.Retention) while the replica
// runs.
const republishBeats = 30

// publishDefinitions publishes the names and schedules of d's jobs
// (history.Definitions), for the command on a fleet whose jobs its
// configuration does not declare; it reports whether the stores took them.
func (s *Scheduler) publishDefinitions(d *defs) bool {
	v := history.Definitions{Hash: d.hash, Jobs: make([]history.JobDef, len(d.order))}
	for i, j := range d.order {
		v.Jobs[i] = j.spec.Definition()
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := s.cfg.Locker.AppendLog(ctx, history.DefinitionsFamily, v.Append(s.clock.Now())); err != nil {
		s.log.Debug("job definitions not published", "error", err.Error())
		return false
	}
	return true
}

// publishOutage records an outage this replica saw, once the stores are
// back.
func (s *Scheduler) publishOutage(from, to time.Time) {
	o := history.Outage{Replica: s.cfg.Replica, From: from, To: to}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	err := s.cfg.Locker.AppendLog(ctx, history.FleetFamily, o.Append(s.clock.Now()))
	if err != nil {
		s.log.Debug("outage not recorded", "error", err.Error())
	}
}

// runningNow lists this replica's runs going on, oldest first.
func (s *Scheduler) runningNow() []history.RunInfo {
	s.runsMu.Lock()
	out := make([]history.RunInfo, 0, len(s.running))
	for _, r := range s.running {
		out = append(out, r)
	}
	s.runsMu.Unlock()
	slices.SortFunc(out, func(a, b history.RunInfo) int { return a.Since.Compare(b.Since) })
	return out
}

// runStarted and runEnded keep the list of runs going on.
func (s *Scheduler) runStarted(r history.RunInfo) {
	s.runsMu.Lock()
	s.running[r.RunID] = r
	s.runsMu.Unlock()
}

func (s *Scheduler) runEnded(id string) {
	s.runsMu.Lock()
	delete(s.running, id)
	s.runsMu.Unlock()
}
