// Package history is slotlock's read model: what the lock stores record of
// a fleet of replicas, and the views that `slotlock status`, `slotlock
// history` and the status page show of it. The engine (package scheduler)
// writes these records; this package reads them, and owns their encoding,
// so that reader and writer agree on one format.
//
// The name says what every view here is built from: logs the stores keep.
// Each job has a slot history (one Entry per slot: its Outcome and, for a
// skip, a cancel or a miss, its Reason); the fleet log holds the replicas'
// heartbeats, the outages they saw and the operators' control actions.
//
// Reading a job's newest outcomes takes a Store (a locking.Locker, such
// as scheduler.Config.Locker, is one):
//
//	entries, err := history.ReadEntries(ctx, locker, "backup", time.Time{}, 20)
//	for _, e := range entries {
//		fmt.Println(e.Slot, e.Outcome, e.Reason)
//	}
//
// ReadStatus joins what the configuration says of some jobs (Job) with
// their pause, last outcome and runs going on, and lists the replicas
// alive; ReadSlots lays a job's nominal slots over a window beside their
// entries (a timeline: a slot without an entry is pending, running or
// unrecorded); ReadFleet returns the fleet log itself. RecordControl adds
// an operator's action to the fleet log.
package history
