package scheduler

import (
	"context"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// Slots this replica came too late for are not missed when another
// replica handled them: a replica frozen for 12 s while two others ran
// every slot warned "late, missed: 9, misfire policy skip" for slots the
// history recorded run. Before the misfire policy's skip line, the late
// slots are looked up — a done marker on a store, an entry in the slot
// history that says more than "did not run", a claim still open — and
// only the others are logged late (warn); the handled ones get one debug
// line, slot.skipped reason done with count and first_slot.

// maxHandledCheck bounds the late slots looked up one by one: beyond it
// (a replica paused for very long) they are all logged late, as they were.
const maxHandledCheck = 1024

// logUnhandled logs the slots of late that no replica handled as late
// (note says why), and the handled ones as done, once every replica that
// could fire them normally has tried.
func (m *misfire) logUnhandled(j *job, late lateRange, note string) {
	name := j.name()
	if late.atLeast || late.count > maxHandledCheck || late.count == 0 {
		m.logLate(name, late, note)
		return
	}
	var slots []time.Time
	for t := late.first; !t.IsZero() && !t.After(late.last); t = j.spec.Schedule.Next(t) {
		slots = append(slots, t)
	}
	if !m.sleep(j.dueAt(late.last).Add(m.recoverAfter()).Sub(m.clock.Now()), m.stopping) {
		return
	}
	handled := m.handledSlots(name, slots)
	var done, left lateRange
	for i, t := range slots {
		if handled[i] {
			done.add(t)
		} else {
			left.add(t)
		}
	}
	if done.count > 0 {
		m.skipped(name, slotString(done.last), history.ReasonDone, done.count, "count", done.count,
			"first_slot", slotString(done.first), "note", "this replica came too late for them; other replicas handled them")
	}
	if left.count > 0 {
		m.logLate(name, left, note)
	}
}

// logOlder logs the slots of late that the policy leaves, older than
// those it recovers. Those the loop woke too late for are looked up first,
// as under skip (logUnhandled), on a goroutine of their own so that the
// recovery does not wait for the lookup.
func (m *misfire) logOlder(j *job, late lateRange, note string) {
	if !late.woke {
		m.logLate(j.name(), late, note)
		return
	}
	m.spawn(func() { m.logUnhandled(j, late, note) })
}

// handledSlots reports, for each of job's slots, whether some replica
// handled it: its done marker is on a store, its history says more than
// "did not run" (the join of its entries), or its claim is open (a run
// going on). A lookup that fails says not handled: the slot is logged
// late, as it was.
func (m *misfire) handledSlots(job string, slots []time.Time) []bool {
	out := make([]bool, len(slots))
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	for i := 0; i < len(slots); i += maxCheckBatch {
		part := slots[i:min(i+maxCheckBatch, len(slots))]
		keys := make([]locking.Key, len(part))
		for k, t := range part {
			keys[k] = history.SlotKey(job, t)
		}
		got, err := m.cfg.Locker.Handled(ctx, keys)
		if err != nil {
			break
		}
		for k := range min(len(got), len(part)) {
			out[i+k] = got[k]
		}
	}
	m.handledByHistory(ctx, job, slots, out)
	m.handledByClaims(ctx, job, slots, out)
	return out
}

// handledByHistory marks the slots whose history entries say they ran,
// may have, or were not run by a rule.
func (m *misfire) handledByHistory(ctx context.Context, job string, slots []time.Time, out []bool) {
	if m.cfg.HistoryKeep <= 0 || allTrue(out) {
		return
	}
	m.inflight <- struct{}{}
	log, err := m.cfg.Locker.ReadLog(ctx, job, slots[0].Unix(), historyReadLimit(m.cfg.HistoryKeep))
	<-m.inflight
	if err != nil {
		return
	}
	for i, t := range slots {
		if e, found, err := entryOf(job, log, t.Unix()); !out[i] && err == nil && found {
			out[i] = e.Evidence() > history.NotRun
		}
	}
}

// handledByClaims marks the slots whose claim is still open.
func (m *misfire) handledByClaims(ctx context.Context, job string, slots []time.Time, out []bool) {
	if allTrue(out) {
		return
	}
	claims, err := m.cfg.Locker.ReadClaims(ctx, job)
	if err != nil {
		return
	}
	open := history.ClaimedSlots(claims)
	for i, t := range slots {
		out[i] = out[i] || open[t.Unix()]
	}
}

func allTrue(bs []bool) bool {
	for _, b := range bs {
		if !b {
			return false
		}
	}
	return true
}
