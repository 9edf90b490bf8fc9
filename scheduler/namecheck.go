package scheduler

import (
	"time"

	"github.com/slotlock/slotlock/scheduler/history"
)

// The name check. Two processes under one replica name stay exclusive
// (a lease is its random token), but their lines, lock holders and
// heartbeats cannot be told apart, and the candidate ranking counts them
// as one replica (history.NameShared says why). A new user meets it on
// the first try: two `slotlock run` on one laptop both take the host name.
// Each view read (fleet_view.go) looks for another process that beat
// under this name while this one ran, and warns once per such process;
// `slotlock status` says the same from the heartbeats.

// checkName warns of each process in alive (a view read at now) that runs
// under this replica's name beside this one.
func (f *fleet) checkName(alive []history.ReplicaInfo, now time.Time) {
	self := history.ReplicaInfo{Replica: f.cfg.Replica, Instance: f.instance, Started: f.started,
		Beat: f.cfg.Beat.String(), Seen: now}
	for _, r := range alive {
		if f.namesWarned[r.Instance] || !r.Stopped.IsZero() || !history.NameShared(self, r) {
			continue
		}
		f.namesWarned[r.Instance] = true
		f.log.Warn("another process runs under this replica's name: the lines, lock holders and heartbeats "+
			"of the two cannot be told apart, and the slots' candidates count them as one replica (locks stay "+
			"exclusive); give each replica its own name (SLOTLOCK_REPLICA)",
			"event", evReplicaNameShared, "instance", f.instance, "other_instance", r.Instance,
			"other_started", r.Started.UTC().Format(time.RFC3339))
	}
}
