package scheduler

import (
	"time"

	"github.com/slotlock/slotlock/scheduler/history"
)

// Notifications (package scheduler/notify sends them). The scheduler's
// part is to say, once fleet-wide, that a slot's outcome entry was
// written, and by whom: it calls Notifier.Written on the replica whose
// write of the entry succeeded — the writer of record — and only there:
//
//   - a run's end (endRun): the claim became the done marker with the
//     entry, on a majority, under the run's own lease;
//   - a settler's abandoned or may-have-started missed entry
//     (settleAbandoned, settleUnconfirmed): the takeover lease's end;
//   - the reconciler's missed entry (judgeMissing): the fenced IfAbsent
//     append that added it on a majority.
//
// Each of these writes succeeds on at most one replica per slot (the
// lease or the IfAbsent append decides), which is what makes a
// notification once per event. Entries that restate one already written
// (closeRecorded, the paused entries every replica writes) are not
// reported.

// Notifier is told of the slot outcomes this replica wrote as the writer
// of record. Written must not block: the scheduler calls it from the
// goroutine that ended the slot.
type Notifier interface {
	Written(w Written)
}

// Written is one outcome entry written by this replica.
type Written struct {
	Job   string
	Slot  time.Time
	Entry history.Entry
	// Rules are the job's notify rules at the time of the write.
	Rules []NotifyRule
}

// NotifyRule is one entry of a job's notify list: the events (failed,
// missed, abandoned, recovered) that target To is told of.
type NotifyRule struct {
	To string
	On []string
}

// notifyWritten reports entry, of slot t of j, to the Notifier, when the
// job has rules.
func (e *engine) notifyWritten(j *job, t time.Time, entry history.Entry) {
	if e.cfg.Notifier == nil || len(j.spec.Notify) == 0 {
		return
	}
	e.cfg.Notifier.Written(Written{Job: j.name(), Slot: t.UTC(), Entry: entry, Rules: j.spec.Notify})
}
