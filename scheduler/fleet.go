package scheduler

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"slices"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// The fleet: every replica publishes a heartbeat — who it is, which build
// and job definitions it runs, what it is running now — and, when the
// lock stores come back after it lost their majority, the outage it saw.
// Both live in the log of one family that no job can be named after
// (FleetFamily), for a day. `slotlock status` shows the replicas alive;
// the reconciler asks whether anybody was alive, or the stores down, when
// a slot was missed.

// FleetFamily is the lock-store family of fleet-wide records: heartbeats,
// outages and the reconciler's lease (a job name cannot start with '_').
// A heartbeat's entry is the same on every beat of a process (only its
// score, the time, moves), so a beat that reached only some stores leaves
// nothing stale behind. The runs going on, which change, live in their own
// log (runsFamily), one entry per process, dropped three beats after it
// was written.
const (
	FleetFamily = "_fleet"
	runsFamily  = "_runs"
)

const (
	// fleetRetention is how long heartbeats and outages are kept: the
	// reconciler judges no slot older than that.
	fleetRetention = 24 * time.Hour
	// fleetKeep bounds the fleet log's entries.
	fleetKeep = 10_000
	// beatRuns bounds the runs a heartbeat lists.
	beatRuns = 50
	// aliveBeats: a replica whose last heartbeat is older than this many
	// beats is not alive.
	aliveBeats = 3
)

// Kinds of fleet log entries.
const (
	kindReplica = "replica"
	kindOutage  = "outage"
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
	// going on (at most beatRuns; RunningCount of them in all).
	Running      []RunInfo `json:"running,omitempty"`
	RunningCount int       `json:"running_count,omitempty"`
}

// runsEntry is a process's list of runs going on (runsFamily).
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
	Controls []Control // operator actions (control.go), newest first
}

// Alive returns the replicas whose last heartbeat is at most aliveBeats of
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

// aliveAt reports whether some replica may have been alive at t: started
// by then, and t no later than a beat (and a second, for the score's
// rounding) after its last heartbeat — a live replica writes one every
// beat. (A replica that could not write its beats for want of a quorum
// makes the reason no_quorum, which is asked first.)
func (f Fleet) aliveAt(t time.Time) bool {
	for _, r := range f.Replicas {
		if !r.Started.After(t) && !t.After(r.Seen.Add(r.beat()+time.Second)) {
			return true
		}
	}
	return false
}

// downAt reports whether some replica saw the stores without a majority
// around t (within slack).
func (f Fleet) downAt(t time.Time, slack time.Duration) bool {
	for _, o := range f.Outages {
		if !t.Before(o.From.Add(-slack)) && !t.After(o.To.Add(slack)) {
			return true
		}
	}
	return false
}

// definitionsSince is when the replica began running the definitions its
// heartbeat names.
func (r ReplicaInfo) definitionsSince() time.Time {
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

// ReadFleet returns the heartbeats and outages the lock stores hold, and
// the runs going on that the replicas listed.
func ReadFleet(ctx context.Context, locker locking.Store) (Fleet, error) {
	entries, err := locker.ReadLog(ctx, FleetFamily, 0, fleetKeep)
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
			// Stores that missed a beat hold an older score of the same
			// entry: keep the newest (entries come newest first).
			if _, dup := seen[ri.Instance]; !dup {
				seen[ri.Instance] = len(f.Replicas)
				f.Replicas = append(f.Replicas, ri)
			}
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
	runs, err := locker.ReadLog(ctx, runsFamily, 0, fleetKeep)
	if err != nil {
		return Fleet{}, err
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
	return f, nil
}

// beatLoop publishes this replica's heartbeat every Beat until the
// scheduler stops. The heartbeat follows reloads: it names the definitions
// in force at each beat.
func (s *Scheduler) beatLoop(started time.Time) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	instance := hex.EncodeToString(b[:])
	var (
		cur  *defs
		info []byte
	)
	prevRuns := ""
	for {
		if d := s.jobSet(); d != cur {
			cur = d
			info, _ = json.Marshal(ReplicaInfo{Kind: kindReplica, Replica: s.cfg.Replica, Instance: instance,
				Version: s.cfg.Version, DefinitionsHash: d.hash, DefinitionsSince: d.since.UTC(), Started: started.UTC(),
				Beat: s.cfg.Beat.String(), Jobs: len(d.order)}) // strings, numbers and times: cannot fail
		}
		prevRuns = s.beat(string(info), instance, prevRuns)
		if !s.sleep(s.cfg.Beat, s.stopping) {
			return
		}
	}
}

// beat writes one heartbeat (info, scored now) and the list of runs going
// on in place of prevRuns; it returns the list it wrote (prevRuns again
// when the stores did not take it).
func (s *Scheduler) beat(info, instance, prevRuns string) string {
	now := s.clock.Now()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	err := s.cfg.Locker.AppendLog(ctx, FleetFamily, locking.LogAppend{
		Entry: locking.LogEntry{Score: now.Unix(), Value: info},
		Keep:  fleetKeep, Floor: now.Add(-fleetRetention).Unix(),
	})
	if err != nil {
		s.log.Debug("heartbeat not written", "error", err.Error())
		return prevRuns
	}
	running := s.runningNow()
	if len(running) == 0 && prevRuns == "" {
		return ""
	}
	b, _ := json.Marshal(runsEntry{Instance: instance, Running: running[:min(len(running), beatRuns)], Count: len(running)})
	err = s.cfg.Locker.AppendLog(ctx, runsFamily, locking.LogAppend{
		Entry:   locking.LogEntry{Score: now.Unix(), Value: string(b)},
		Replace: prevRuns, Keep: fleetKeep, Floor: now.Add(-aliveBeats * s.cfg.Beat).Unix(),
	})
	if err != nil {
		return prevRuns
	}
	if len(running) == 0 {
		return "" // the empty list replaced the last one; nothing to replace next time
	}
	return string(b)
}

// publishOutage records an outage this replica saw, once the stores are
// back.
func (s *Scheduler) publishOutage(from, to time.Time) {
	o := Outage{Kind: kindOutage, Replica: s.cfg.Replica, FromUnix: from.Unix(), ToUnix: to.Unix()}
	b, _ := json.Marshal(o)
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	err := s.cfg.Locker.AppendLog(ctx, FleetFamily, locking.LogAppend{
		Entry: locking.LogEntry{Score: from.Unix(), Value: string(b)},
		Keep:  fleetKeep, Floor: s.clock.Now().Add(-fleetRetention).Unix(),
	})
	if err != nil {
		s.log.Debug("outage not recorded", "error", err.Error())
	}
}

// runningNow lists this replica's runs going on, oldest first.
func (s *Scheduler) runningNow() []RunInfo {
	s.runsMu.Lock()
	out := make([]RunInfo, 0, len(s.running))
	for _, r := range s.running {
		out = append(out, r)
	}
	s.runsMu.Unlock()
	slices.SortFunc(out, func(a, b RunInfo) int { return a.Since.Compare(b.Since) })
	return out
}

// runStarted and runEnded keep the list of runs going on.
func (s *Scheduler) runStarted(r RunInfo) {
	s.runsMu.Lock()
	s.running[r.RunID] = r
	s.runsMu.Unlock()
}

func (s *Scheduler) runEnded(id string) {
	s.runsMu.Lock()
	delete(s.running, id)
	s.runsMu.Unlock()
}
