package scheduler

import (
	"context"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// The fallbacks (slot_ranks.go): a replica ranked just after a slot's
// candidates (dueFallbacks of them) fires it Fallback after its due time and first asks the
// stores, cheaply, whether it was handled — a done marker on the claim,
// read on one store (locking.Store.Handled) — before trying any claim.
// Handled: nothing happens here (the slot's outcome is its winner's). Not
// seen as handled, or the stores did not say: the slot goes through the
// normal attempt, claim first, so a slot whose candidates died or were
// wrongly chosen still runs once. The fallbacks that fall due at one
// instant are checked in one call.

// dueSlot is a slot of a job that the loop fires.
type dueSlot struct {
	j *job
	t time.Time
}

// maxCheckBatch bounds the slots one Handled call asks about: a larger
// batch is split, the parts checked in parallel.
const maxCheckBatch = 256

// checkFallbacks checks the fallback slots due now, in batches, each on
// a goroutine of its own.
func (ad *admission) checkFallbacks(checks []dueSlot) {
	for len(checks) > 0 {
		n := min(len(checks), maxCheckBatch)
		batch := checks[:n:n]
		checks = checks[n:]
		ad.spawn(func() { ad.checkFallback(batch) })
	}
}

// checkFallback attempts the slots of batch that the stores do not show
// as handled. The check is bounded by half of what is left of the
// lateness bound after the fallback's delay, so that the attempts that
// follow it are still fresh.
//
// A replica past its capacity (its own claims wait in admission) drops its
// fallback slots without a call: under overload the candidates are late
// too, so a fallback would find most slots not yet handled and add its
// claims to theirs — the load that turns an overload into a collapse.
// Each such slot is the candidates' to run or shed with their own line
// (or, were they all gone, the reconciler's to report missed).
func (ad *admission) checkFallback(batch []dueSlot) {
	if len(batch) == 0 {
		return
	}
	if ad.busy() {
		ad.log.Debug("fallback slots dropped: this replica is past its capacity", "slots", len(batch))
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
		ad.log.Debug("fallback check failed; trying the slots", "slots", len(batch), "error", err.Error())
		handled = nil
	}
	skipped := 0
	for i, d := range batch {
		if i < len(handled) && handled[i] {
			skipped++
			continue
		}
		ad.fireSlot(d.j, d.t) // admission.go: started, queued or shed
	}
	if skipped > 0 {
		ad.log.Debug("fallback slots already handled", "slots", skipped, "of", len(batch))
	}
}
