package scheduler

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"
)

// The heartbeat: every replica publishes who it is, which build and job
// definitions it runs and what it is running now, every Config.Beat, and
// the outages of the lock stores it saw, in the fleet log
// (history.FleetFamily; history.ReadFleet reads them back). `slotlock
// status` shows the replicas alive; the reconciler asks whether anybody
// was alive, or the stores down, when a slot was missed.

// fleet is the component that knows the fleet: it publishes this
// replica's heartbeats (and the runs going on here, and the outages it
// saw), and reads the others' into the view each slot's candidates are
// ranked over (fleet_view.go).
type fleet struct {
	*engine
	fallback time.Duration // Config.Fallback, defaulted
	seed     uint64        // replicaSeed of this replica's name (slot_ranks.go)
	clocks   *clockCheck   // nil when the Locker reads no clocks (clockcheck.go)

	// instance tells this process's heartbeats from the others' of its
	// name (set by begin); started is when it started; namesWarned are
	// the other processes of its name it warned of (namecheck.go).
	instance    string
	started     time.Time
	namesWarned map[string]bool

	runsMu  sync.Mutex
	running map[string]history.RunInfo // runs going on, by run id

	// view is the live replicas that run this replica's job definitions,
	// nil while unknown; viewAt is when it was read (the view loop's
	// own); viewSource, when set (tests), replaces the read.
	view       atomic.Pointer[fleetView]
	viewAt     time.Time
	viewSource func() []string
}

func newFleet(e *engine) *fleet {
	return &fleet{engine: e, fallback: e.cfg.Fallback, seed: replicaSeed(e.cfg.Replica), clocks: newClockCheck(e),
		running: map[string]history.RunInfo{}, namesWarned: map[string]bool{}}
}

// begin names this process (its instance) and its start, before the
// heartbeat and the view loops read them.
func (f *fleet) begin(started time.Time) {
	f.instance, f.started = f.instanceID(), started
}

// dropView forgets the view (every replica a candidate) until the next
// read: the job definitions it was read for changed.
func (f *fleet) dropView() { f.view.Store(nil) }

// beatLoop publishes this replica's heartbeat every Beat until the
// scheduler stops. The heartbeat follows reloads: it names the definitions
// in force at each beat.
func (f *fleet) beatLoop() {
	prevRuns := ""
	var published *defs // the job set last published (publishDefinitions)
	sincePublished := 0 // beats since
	beats := 0
	for {
		d := f.jobSet()
		info := history.ReplicaInfo{Replica: f.cfg.Replica, Instance: f.instance,
			Version: f.cfg.Version, DefinitionsHash: d.hash, DefinitionsSince: d.since.UTC(), Started: f.started.UTC(),
			Beat: f.cfg.Beat.String(), Jobs: len(d.order), ClockOffsetMS: f.clocks.latest()}
		prevRuns = f.beat(info, prevRuns)
		if sincePublished++; d != published || sincePublished >= republishBeats {
			if f.publishDefinitions(d) {
				published, sincePublished = d, 0
			}
		}
		if beats++; beats%defsBeats == 0 || f.defsUnread.Load() {
			f.learnDefinitions()
		}
		if !f.sleep(f.cfg.Beat, f.stopping) {
			// A last heartbeat says it: the others drop this replica from
			// their candidates (fleet_view.go) at their next look.
			info.Stopped = f.clock.Now().UTC()
			f.beat(info, prevRuns)
			return
		}
	}
}

// beat writes one heartbeat (info, scored now) and the list of runs going
// on in place of prevRuns; it returns the list it wrote (prevRuns again
// when the stores did not take it).
func (f *fleet) beat(info history.ReplicaInfo, prevRuns string) string {
	now := f.clock.Now()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	err := f.cfg.Locker.AppendLog(ctx, history.FleetFamily, info.Append(now))
	if err != nil {
		f.log.Debug("heartbeat not written", "error", err.Error())
		return prevRuns
	}
	running := f.runningNow()
	if len(running) == 0 && prevRuns == "" {
		return ""
	}
	runs := history.RunsAppend(info.Instance, running, prevRuns, now, f.cfg.Beat)
	err = f.cfg.Locker.AppendLog(ctx, history.RunsFamily, runs)
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
func (f *fleet) publishDefinitions(d *defs) bool {
	v := history.Definitions{Hash: d.hash, Jobs: make([]history.JobDef, len(d.order))}
	for i, j := range d.order {
		v.Jobs[i] = j.spec.Definition()
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := f.cfg.Locker.AppendLog(ctx, history.DefinitionsFamily, v.Append(f.clock.Now())); err != nil {
		f.log.Debug("job definitions not published", "error", err.Error())
		return false
	}
	return true
}

// publishOutage records an outage this replica saw, once the stores are
// back.
func (f *fleet) publishOutage(from, to time.Time) {
	o := history.Outage{Replica: f.cfg.Replica, From: from, To: to}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	err := f.cfg.Locker.AppendLog(ctx, history.FleetFamily, o.Append(f.clock.Now()))
	if err != nil {
		f.log.Debug("outage not recorded", "error", err.Error())
	}
}

// runningNow lists this replica's runs going on, oldest first.
func (f *fleet) runningNow() []history.RunInfo {
	f.runsMu.Lock()
	out := make([]history.RunInfo, 0, len(f.running))
	for _, r := range f.running {
		out = append(out, r)
	}
	f.runsMu.Unlock()
	slices.SortFunc(out, func(a, b history.RunInfo) int { return a.Since.Compare(b.Since) })
	return out
}

// runStarted and runEnded keep the list of runs going on.
func (f *fleet) runStarted(r history.RunInfo) {
	f.runsMu.Lock()
	f.running[r.RunID] = r
	f.runsMu.Unlock()
}

func (f *fleet) runEnded(id string) {
	f.runsMu.Lock()
	delete(f.running, id)
	f.runsMu.Unlock()
}
