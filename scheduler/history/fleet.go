package history

import (
	"context"
	"encoding/json"
	"time"
)

// The fleet: every replica publishes a heartbeat — who it is, which build
// and job definitions it runs, what it is running now — and, when the
// lock stores come back after it lost their majority, the outage it saw.
// Both live in the log of FleetFamily, for a day (Retention). `slotlock
// status` shows the replicas alive; the reconciler asks whether anybody
// was alive, or the stores down, when a slot was missed.
//
// A heartbeat's entry is the same on every beat of a process (only its
// score, the time, moves), so a beat that reached only some stores leaves
// nothing stale behind. The runs going on, which change, live in their
// own log (RunsFamily), one entry per process, dropped three beats after
// it was written.

const (
	// Retention is how long heartbeats, outages and control actions are
	// kept: the reconciler judges no slot older than that.
	Retention = 24 * time.Hour
	// fleetKeep bounds the fleet log's entries.
	fleetKeep = 10_000
	// maxBeatRuns bounds the runs a heartbeat lists.
	maxBeatRuns = 50
	// aliveBeats: a replica whose last heartbeat is older than this many
	// beats is not alive.
	aliveBeats = 3
)

// DefaultBeat is how often a replica publishes its heartbeat unless told
// otherwise, and what a heartbeat that does not say is taken to mean: a
// replica silent for three beats is not alive.
const DefaultBeat = 10 * time.Second

// Kinds of fleet log entries.
const (
	kindReplica = "replica"
	kindOutage  = "outage"
	kindControl = "control"
)

// ReplicaInfo is a replica's heartbeat.
type ReplicaInfo struct {
	Kind            string    `json:"kind"` // "replica"
	Replica         string    `json:"replica"`
	Instance        string    `json:"instance"` // random, one per process start
	Version         string    `json:"version,omitempty"`
	DefinitionsHash string    `json:"definitions_hash,omitempty"`
	Started         time.Time `json:"started"`
	Beat            string    `json:"beat"` // the replica's heartbeat interval (a Go duration)
	Jobs            int       `json:"jobs"`
	// DefinitionsSince is when the process last reloaded its job
	// definitions (zero: it runs them since Started).
	DefinitionsSince time.Time `json:"definitions_since,omitzero"`
	// Seen is when the heartbeat was written (its score), on the
	// replica's clock, to the second.
	Seen time.Time `json:"-"`
	// Running is what the process's latest heartbeat listed of its runs
	// going on (at most 50; RunningCount of them in all).
	Running      []RunInfo `json:"running,omitempty"`
	RunningCount int       `json:"running_count,omitempty"`
	// ClockOffsetMS is the replica's clock minus the median of the lock
	// nodes' clocks at its latest clock check, in milliseconds; nil while
	// unknown (no check judged yet, in-process locks, an older replica).
	// Two replicas' difference is how far apart their clocks are.
	ClockOffsetMS *int64 `json:"clock_offset_ms,omitempty"`
	// Stopped, in a replica's last heartbeat, is when it began to stop:
	// it fires no more slots (its runs may still be finishing), so the
	// others stop counting it among a slot's candidates at once instead
	// of three beats later. Older readers ignore the field.
	Stopped time.Time `json:"stopped,omitzero"`
}

// runsEntry is a process's list of runs going on (RunsFamily).
type runsEntry struct {
	Instance string    `json:"instance"`
	Running  []RunInfo `json:"running"`
	Count    int       `json:"count"`
}

// RunInfo is a run going on.
type RunInfo struct {
	Job     string    `json:"job"`
	Slot    string    `json:"slot"` // RFC 3339 UTC, or "manual"
	RunID   string    `json:"run_id"`
	Token   uint64    `json:"fencing_token"`
	Replica string    `json:"replica"`
	Since   time.Time `json:"since"`
}

// Outage is a span during which a replica could not reach a majority of
// the lock stores.
type Outage struct {
	Kind     string    `json:"kind"` // "outage"
	Replica  string    `json:"replica"`
	From, To time.Time `json:"-"`
	FromUnix int64     `json:"from"`
	ToUnix   int64     `json:"to"`
}

// Fleet is what the fleet log holds.
type Fleet struct {
	Replicas []ReplicaInfo // one per instance, newest heartbeat first
	Outages  []Outage
	Controls []Control // operator actions, newest first
}

// Alive returns the replicas whose last heartbeat is at most three of
// their beats old at now.
func (f Fleet) Alive(now time.Time) []ReplicaInfo {
	var out []ReplicaInfo
	for _, r := range f.Replicas {
		if !now.After(r.Seen.Add(aliveBeats * r.beat())) {
			out = append(out, r)
		}
	}
	return out
}

// AliveAt reports whether some replica may have been alive at t: started
// by then, not stopping yet (its last heartbeat's Stopped: after a clean
// stop it fires no slot), and t no later than a beat (and a second, for
// the score's rounding) after its last heartbeat — a live replica writes
// one every beat. (A replica that could not write its beats for want of a
// quorum makes the reason no_quorum, which is asked first.)
func (f Fleet) AliveAt(t time.Time) bool {
	for _, r := range f.Replicas {
		stopped := !r.Stopped.IsZero() && !t.Before(r.Stopped)
		if !r.Started.After(t) && !stopped && !t.After(r.Seen.Add(r.beat()+time.Second)) {
			return true
		}
	}
	return false
}

// DownAt reports whether some replica saw the stores without a majority
// around t (within slack).
func (f Fleet) DownAt(t time.Time, slack time.Duration) bool {
	for _, o := range f.Outages {
		if !t.Before(o.From.Add(-slack)) && !t.After(o.To.Add(slack)) {
			return true
		}
	}
	return false
}

// DefinitionsSinceOrStart is when the replica began running the
// definitions its heartbeat names: DefinitionsSince, else Started.
func (r ReplicaInfo) DefinitionsSinceOrStart() time.Time {
	if r.DefinitionsSince.IsZero() {
		return r.Started
	}
	return r.DefinitionsSince
}

func (r ReplicaInfo) beat() time.Duration {
	d, err := time.ParseDuration(r.Beat)
	if err != nil || d <= 0 {
		return DefaultBeat
	}
	return d
}

// ReadFleet returns the heartbeats, outages and control actions the
// stores hold, and the runs going on that the replicas listed.
func ReadFleet(ctx context.Context, store Store) (Fleet, error) {
	entries, err := store.ReadLog(ctx, FleetFamily, 0, fleetKeep)
	if err != nil {
		return Fleet{}, err
	}
	var f Fleet
	seen := map[string]int{} // instance -> index in f.Replicas
	for _, e := range entries {
		var ri ReplicaInfo // an outage's kind and replica decode alike
		if json.Unmarshal([]byte(e.Value), &ri) != nil {
			continue // not ours: a newer version's record
		}
		switch ri.Kind {
		case kindReplica:
			ri.Seen = time.Unix(e.Score, 0)
			f.addBeat(seen, ri)
		case kindOutage:
			var o Outage
			if json.Unmarshal([]byte(e.Value), &o) != nil {
				continue
			}
			o.From, o.To = time.Unix(o.FromUnix, 0), time.Unix(o.ToUnix, 0)
			f.Outages = append(f.Outages, o)
		case kindControl:
			var c Control
			if json.Unmarshal([]byte(e.Value), &c) == nil {
				f.Controls = append(f.Controls, c)
			}
		}
	}
	return f, readRuns(ctx, store, &f, seen)
}

// ReadAlive returns the replicas alive at now (Fleet.Alive) among those
// whose last heartbeat is scored since or later: ReadFleet's replicas
// without the rest of the fleet log (up to 10,000 entries of outages,
// controls and a day of heartbeats) or the runs going on — what every
// replica reads once a beat for its slots' candidates.
func ReadAlive(ctx context.Context, store Store, since, now time.Time) ([]ReplicaInfo, error) {
	entries, err := store.ReadLog(ctx, FleetFamily, since.Unix(), fleetKeep)
	if err != nil {
		return nil, err
	}
	var f Fleet
	seen := map[string]int{}
	for _, e := range entries { // newest first
		var ri ReplicaInfo
		if json.Unmarshal([]byte(e.Value), &ri) != nil || ri.Kind != kindReplica {
			continue
		}
		ri.Seen = time.Unix(e.Score, 0)
		f.addBeat(seen, ri)
	}
	return f.Alive(now), nil
}

// addBeat adds heartbeat ri to f's replicas (by instance: seen), read
// newest first, unless its process's newer one is there: stores that
// missed a beat hold an older score of the same process. Two heartbeats
// of one process scored the same second — a clean stop within the second
// of a beat — come in the order of their values, and the last one, which
// says Stopped, sorts after the other: its Stopped is kept all the same,
// or the process would stay a candidate for three beats after it stopped.
func (f *Fleet) addBeat(seen map[string]int, ri ReplicaInfo) {
	k, dup := seen[ri.Instance]
	if !dup {
		seen[ri.Instance] = len(f.Replicas)
		f.Replicas = append(f.Replicas, ri)
		return
	}
	if kept := &f.Replicas[k]; kept.Seen.Equal(ri.Seen) && kept.Stopped.IsZero() {
		kept.Stopped = ri.Stopped
	}
}

// readRuns adds to f's replicas (by instance: seen) the runs going on
// that each listed last.
func readRuns(ctx context.Context, store Store, f *Fleet, seen map[string]int) error {
	runs, err := store.ReadLog(ctx, RunsFamily, 0, fleetKeep)
	if err != nil {
		*f = Fleet{}
		return err
	}
	listed := map[string]bool{}
	for _, e := range runs { // newest first
		var re runsEntry
		if json.Unmarshal([]byte(e.Value), &re) != nil || listed[re.Instance] {
			continue
		}
		listed[re.Instance] = true
		if i, ok := seen[re.Instance]; ok {
			f.Replicas[i].Running, f.Replicas[i].RunningCount = re.Running, re.Count
		}
	}
	return nil
}
