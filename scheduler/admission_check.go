package scheduler

import (
	"context"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// The checked slots (slot_ranks.go): a replica ranked after a slot's
// first candidate — a later candidate, SecondDelay×rank after its due
// time, or one of the dueFallbacks after the candidates, Fallback after
// it — first asks the stores, cheaply, whether it was handled — a done
// marker on the claim, read on one store (locking.Store.Handled) — before
// trying any claim. Handled: nothing happens here (the slot's outcome is
// its winner's). Not seen as handled, or the stores did not say: the slot
// goes through the normal attempt, claim first, so a slot whose first
// candidate died, froze or was wrongly chosen still runs once; should it
// wait in admission for its turn, it is read again just before its claim
// (attemptAdmitted). The slots checked at one instant are checked in one
// call.

// dueSlot is a slot of a job that the loop fires; candidate: this
// replica is one of its candidates (not a fallback).
type dueSlot struct {
	j         *job
	t         time.Time
	candidate bool
}

// maxCheckBatch bounds the slots one Handled call asks about: a larger
// batch is split, the parts checked in parallel.
const maxCheckBatch = 256

// checkHandled checks the slots due now, in batches, each on a goroutine
// of its own.
func (ad *admission) checkHandled(checks []dueSlot) {
	for len(checks) > 0 {
		n := min(len(checks), maxCheckBatch)
		batch := checks[:n:n]
		checks = checks[n:]
		ad.spawn(func() { ad.checkBatch(batch) })
	}
}

// checkBatch attempts the slots of batch that the stores do not show as
// handled. The check is bounded by half of what is left of the lateness
// bound after the fallback's delay, so that the attempts that follow it
// are still fresh.
//
// A replica past its capacity (its own claims wait in admission) drops its
// fallback slots without a call: under overload the candidates are late
// too, so a fallback would find most slots not yet handled and add its
// claims to theirs — the load that turns an overload into a collapse.
// Each such slot is the candidates' to run or shed with their own line
// (or, were they all gone, the reconciler's to report missed). Its slots
// as a later candidate it keeps: their claims queue behind its first
// candidates' (they fire later), are read again when their turn comes,
// and are the slot's second chance should its first candidate shed it.
func (ad *admission) checkBatch(batch []dueSlot) {
	if ad.busy() {
		kept := make([]dueSlot, 0, len(batch))
		for _, d := range batch {
			if d.candidate {
				kept = append(kept, d)
			}
		}
		if dropped := len(batch) - len(kept); dropped > 0 {
			ad.log.Debug("fallback slots dropped: this replica is past its capacity", "slots", dropped)
		}
		batch = kept
	}
	if len(batch) == 0 {
		return
	}
	keys := make([]locking.Key, len(batch))
	for i, d := range batch {
		keys[i] = history.SlotKey(d.j.name(), d.t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), max((ad.lateness-ad.cfg.Fallback)/2, time.Millisecond))
	handled, err := ad.cfg.Locker.Handled(ctx, keys)
	cancel()
	if err != nil {
		ad.log.Debug("handled check failed; trying the slots", "slots", len(batch), "error", err.Error())
		handled = nil
	}
	skipped := 0
	for i, d := range batch {
		if i < len(handled) && handled[i] {
			skipped++
			continue
		}
		ad.fireChecked(d.j, d.t) // admission_slots.go: started, queued or shed
	}
	if skipped > 0 {
		ad.log.Debug("checked slots already handled", "slots", skipped, "of", len(batch))
	}
}

// handledSince reports whether the stores show slot t of j handled, read
// just before a checked slot's claim when it waited for its turn: until
// deadline at most (its freshness), and false when they do not say.
func (ad *admission) handledSince(j *job, t, deadline time.Time) bool {
	wait := deadline.Sub(ad.clock.Now()) / 2
	if wait <= 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	handled, err := ad.cfg.Locker.Handled(ctx, []locking.Key{history.SlotKey(j.name(), t)})
	return err == nil && len(handled) == 1 && handled[0]
}
