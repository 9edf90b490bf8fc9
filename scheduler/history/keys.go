package history

import (
	"strconv"
	"strings"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// FleetFamily is the lock-store family of fleet-wide records: heartbeats,
// outages, control actions and the reconciler's lease (a job name cannot
// start with '_'). RunsFamily holds each process's list of runs going on
// (ReplicaInfo.Running), apart from its heartbeat, which then never
// changes.
const (
	FleetFamily = "_fleet"
	RunsFamily  = "_runs"
)

// slotPrefix starts the name of a slot's key.
const slotPrefix = "slot:"

// SlotKey is the key of slot t of job: its claim, then its done marker.
func SlotKey(job string, t time.Time) locking.Key {
	return locking.Key{Family: job, Name: slotPrefix + strconv.FormatInt(t.Unix(), 10)}
}

// SlotOfKey parses the nominal time of the slot whose key k is.
func SlotOfKey(k locking.Key) (time.Time, bool) {
	v, ok := strings.CutPrefix(k.Name, slotPrefix)
	if !ok {
		return time.Time{}, false
	}
	sec, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(sec, 0).UTC(), true
}

// ClaimedSlots maps the slots (Unix seconds) of the open claims keys
// (Store.ReadClaims) name.
func ClaimedSlots(keys []locking.Key) map[int64]bool {
	out := make(map[int64]bool, len(keys))
	for _, k := range keys {
		if t, ok := SlotOfKey(k); ok {
			out[t.Unix()] = true
		}
	}
	return out
}
