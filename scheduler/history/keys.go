package history

import (
	"strconv"
	"strings"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// The key layout of the engine, in one place. A key is a family and a
// name; a store keeps it as <prefix>:{<family>}:<name>, so that one hash
// tag holds a family together on one Redis Cluster shard. A job's family
// is its name; the fleet-wide families start with '_', which no job name
// can.
//
// In a job's family:
//
//	slot:<unix seconds>  a slot's claim, then its done marker (SlotKey)
//	run                  the job lease of overlap forbid and replace (RunKey)
//	manual:<hex>         a manual run's own lease under overlap allow (ManualKey)
//	last                 record: the latest slot a replica handled (LastKey)
//	missed               record: the latest slot missed in an outage (MissedKey)
//	reconciled           record: the latest slot the reconciler judged (ReconciledKey)
//	replace              record: the newest slot that asked to replace a run (ReplaceKey)
//
// and the lock layer's own names, reserved there (locking/internal/wire):
// fence (the fencing counter; ReconcilerFence is a register beside it),
// claims and lives (open claims and their leases), pause, log (the slot
// history) and undone:<...> (tombstones).
//
// Fleet-wide: FleetFamily holds the heartbeats, outages and control
// actions in its log and the reconciler's lease (ReconcilerKey);
// RunsFamily each process's list of runs going on (ReplicaInfo.Running),
// apart from its heartbeat, which then never changes; DefinitionsFamily
// the published job definitions; NotifyFamily the notification log and
// the lease of its sweeper (NotifySweeperKey, package scheduler/notify).
const (
	FleetFamily       = "_fleet"
	RunsFamily        = "_runs"
	DefinitionsFamily = "_jobs"
	NotifyFamily      = "_notify"
)

// Names in a job's family.
const (
	slotPrefix     = "slot:"
	manualPrefix   = "manual:"
	runName        = "run"
	lastName       = "last"
	missedName     = "missed"
	reconciledName = "reconciled"
	replaceName    = "replace"
	// ReconcilerFence is the register, in a job's family, that fences the
	// reconciler's writes to the job's history with its lease's token.
	ReconcilerFence = "reconciler"
)

// ReconcilerKey is the reconciler's lease: one pass at a time, fleet-wide.
var ReconcilerKey = locking.Key{Family: FleetFamily, Name: "reconciler"}

// NotifySweeperKey is the lease of the replica that resends the
// notifications a dead sender left pending.
var NotifySweeperKey = locking.Key{Family: NotifyFamily, Name: "sweeper"}

// RunKey is the job lease of job.
func RunKey(job string) locking.Key { return locking.Key{Family: job, Name: runName} }

// ManualKey is a manual run's own lease, id drawn for it.
func ManualKey(job, id string) locking.Key { return locking.Key{Family: job, Name: manualPrefix + id} }

// LastKey is job's record of the latest slot a replica handled.
func LastKey(job string) locking.Key { return locking.Key{Family: job, Name: lastName} }

// MissedKey is job's record of the latest slot a replica skipped for want
// of a quorum, Unix seconds.
func MissedKey(job string) locking.Key { return locking.Key{Family: job, Name: missedName} }

// ReconciledKey is job's record of the latest slot the reconciler judged.
func ReconciledKey(job string) locking.Key { return locking.Key{Family: job, Name: reconciledName} }

// ReplaceKey is job's record of the newest slot that asked the run going
// on to stop (overlap replace).
func ReplaceKey(job string) locking.Key { return locking.Key{Family: job, Name: replaceName} }

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
