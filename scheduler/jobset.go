package scheduler

import (
	"errors"
	"time"
)

// The job set in force. New builds it; Reload builds another and the loop
// swaps it in (timer_reload.go). A job set is never changed once in force, so
// every goroutine that loads it sees one consistent set.

// defs is a job set and what the heartbeat says of it.
type defs struct {
	byName map[string]*job
	order  []*job
	hash   string    // Config.DefinitionsHash, then Reload's; else specsHash
	since  time.Time // when a reload put it in force (zero: since Run started)
}

// jobSet returns the job set in force.
func (e *engine) jobSet() *defs { return e.defs.Load() }

// job returns the job named name in the job set in force.
func (e *engine) job(name string) (*job, bool) {
	j, ok := e.jobSet().byName[name]
	return j, ok
}

// jobList returns the jobs in force, in configuration order.
func (e *engine) jobList() []*job { return e.jobSet().order }

// DefinitionsHash returns the hash of the job definitions in force (the
// heartbeat's): Config.DefinitionsHash, then the latest reload's; where
// that was empty (an embedded scheduler), 12 hex digits of a SHA-256 over
// what each job declares — name, schedule and zone, plugin, enabled,
// timeout, overlap, misfire, retry, jitter, pause_on_failure — not over
// its code.
func (s *Scheduler) DefinitionsHash() string { return s.jobSet().hash }

// buildJobs checks specs and makes their jobs, as New and Reload take
// them; now is when each jitter's bound is looked for from.
func (e *engine) buildJobs(specs []JobSpec, now time.Time) (*defs, error) {
	cfg := e.cfg
	cfg.Jobs = specs
	if err := errors.Join(cfg.problems(now)...); err != nil {
		return nil, err
	}
	d := &defs{byName: make(map[string]*job, len(specs))}
	for i := range specs {
		spec := specs[i].withDefaults()
		j := &job{spec: spec, doneTTL: e.doneTTL, jobState: &jobState{recovering: make(chan struct{}, 1)}}
		if spec.Misfire.Policy.recovers() {
			// recover judges a missed slot at most Deadline after it, by
			// its claim first: a handled slot's marker must outlive
			// that, measured from the earliest a run can end. (A claim
			// won later than markerSafe after the slot also reads the
			// slot history: slotRecorded.)
			j.doneTTL = max(e.doneTTL, spec.Misfire.Deadline+e.recoverAfter()+e.cfg.MaxClockSkew+acquireSlack+time.Second)
		}
		// Every replica counts the slot's times from its due time, so the
		// lifetime above holds as it is. The jitter on top is for replicas
		// whose definitions of the job differ for a while (a rolling
		// change): one whose offset for the slot is up to Jitter later than
		// this one's — any replica with a jitter no larger — still finds
		// the marker. A larger jitter that the fleet still runs is added
		// when the marker is written (job.markerTTL, fleet_defs.go).
		j.doneTTL += spec.Jitter
		d.byName[spec.Name] = j
		d.order = append(d.order, j)
	}
	return d, nil
}

// dueAt is when slot t of j is due on this replica: its due time
// (jitter included), not before the reload that made it due earlier
// (dueFloor) when the old definition had not fired it.
func (j *job) dueAt(t time.Time) time.Time {
	d := j.spec.Due(t)
	if d.Before(j.dueFloor) && !t.Before(j.floorFrom) {
		return j.dueFloor
	}
	return d
}
