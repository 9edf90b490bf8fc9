package history

import (
	"encoding/json"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// The encodings of the fleet's records, for the replicas that write them
// (package scheduler) and RecordControl: each is an append to a log, to
// give to the stores' AppendLog.

// Append is r's heartbeat (its Kind set) as an append to the fleet log
// (FleetFamily), scored at now.
func (r ReplicaInfo) Append(now time.Time) locking.LogAppend {
	r.Kind = kindReplica
	b, _ := json.Marshal(r) // strings, numbers and times: cannot fail
	return fleetAppend(string(b), now.Unix(), now)
}

// Append is the outage o (its Kind set, its bounds to the second) as an
// append to the fleet log (FleetFamily) at now, scored at its start.
func (o Outage) Append(now time.Time) locking.LogAppend {
	o.Kind, o.FromUnix, o.ToUnix = kindOutage, o.From.Unix(), o.To.Unix()
	b, _ := json.Marshal(o)
	return fleetAppend(string(b), o.FromUnix, now)
}

// fleetAppend is the append of value, scored at score, to the fleet log at
// now: it keeps a day of entries (Retention).
func fleetAppend(value string, score int64, now time.Time) locking.LogAppend {
	return locking.LogAppend{
		Entry: locking.LogEntry{Score: score, Value: value},
		Keep:  fleetKeep, Floor: now.Add(-Retention).Unix(),
	}
}

// RunsAppend is a process's list of runs going on (the first 50 of
// running, and how many there are) as an append to RunsFamily's log at now
// in place of replace, the process's previous list (its Entry.Value is
// what the next one replaces). For a replica that beats every beat: the
// list is dropped three beats later.
func RunsAppend(instance string, running []RunInfo, replace string, now time.Time, beat time.Duration) locking.LogAppend {
	b, _ := json.Marshal(runsEntry{Instance: instance, Running: running[:min(len(running), maxBeatRuns)], Count: len(running)})
	return locking.LogAppend{
		Entry:   locking.LogEntry{Score: now.Unix(), Value: string(b)},
		Replace: replace, Keep: fleetKeep, Floor: now.Add(-aliveBeats * beat).Unix(),
	}
}
