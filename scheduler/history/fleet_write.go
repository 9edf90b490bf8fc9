package history

import (
	"encoding/json"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// The encodings of the fleet log's records, for the replicas that write
// them (package scheduler) and RecordControl.

// Encode returns r as a heartbeat's entry value (its Kind set).
func (r ReplicaInfo) Encode() string {
	r.Kind = kindReplica
	b, _ := json.Marshal(r) // strings, numbers and times: cannot fail
	return string(b)
}

// Encode returns o as an outage's entry value (its Kind set, and its
// bounds to the second).
func (o Outage) Encode() string {
	o.Kind, o.FromUnix, o.ToUnix = kindOutage, o.From.Unix(), o.To.Unix()
	b, _ := json.Marshal(o)
	return string(b)
}

// FleetAppend is the append of value, scored at score, to the fleet log
// (FleetFamily) at now: it keeps a day of entries (Retention).
func FleetAppend(value string, score int64, now time.Time) locking.LogAppend {
	return locking.LogAppend{
		Entry: locking.LogEntry{Score: score, Value: value},
		Keep:  fleetKeep, Floor: now.Add(-Retention).Unix(),
	}
}

// EncodeRuns returns a process's list of runs going on as an entry value
// of RunsFamily: the first 50 of running, and how many there are.
func EncodeRuns(instance string, running []RunInfo) string {
	b, _ := json.Marshal(runsEntry{Instance: instance, Running: running[:min(len(running), maxBeatRuns)], Count: len(running)})
	return string(b)
}

// RunsAppend is the append of value (EncodeRuns) to RunsFamily's log at
// now in place of replace (the process's previous list), for a replica
// that beats every beat: it is dropped three beats later.
func RunsAppend(value, replace string, now time.Time, beat time.Duration) locking.LogAppend {
	return locking.LogAppend{
		Entry:   locking.LogEntry{Score: now.Unix(), Value: value},
		Replace: replace, Keep: fleetKeep, Floor: now.Add(-aliveBeats * beat).Unix(),
	}
}
