package scheduler

import (
	"context"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"
)

// The admission's side of a slot: a scheduled slot enters the queue,
// and leaves it for its attempt (started holding its admission) or for
// the attempt's exit (shed, late); a started attempt asks here for each
// retry of its claim (locks.go).

// admittedAttempts starts an admitted slot's attempt, or carries out the
// exit of one shed before any call (attempts.go).
type admittedAttempts interface {
	attemptSlotWith(j *job, t time.Time, o origin, caller context.Context, tk *ticket) (*history.Entry, error)
	shed(j *job, t time.Time)
}

// newAdmissionOf is the admission of a scheduler: the queue with its
// engine and the attempts it starts.
func newAdmissionOf(e *engine, attempts admittedAttempts) *admission {
	ad := newAdmission(e.cfg.MaxInFlight)
	ad.engine, ad.attempts = e, attempts
	return ad
}

// fireSlot hands scheduled slot t of j to admission: it starts at once,
// waits for its turn (without a goroutine), or is shed as late.
func (ad *admission) fireSlot(j *job, t time.Time) {
	w := &admitWaiter{deadline: j.dueAt(t).Add(ad.lateness), j: j, t: t}
	ad.carryOut(ad.enter(w, ad.clock.Now()))
}

// fireChecked is fireSlot for a slot a check did not see handled
// (admission_check.go): should it wait for its turn, the stores are asked
// again just before its claim — in a burst the first candidates' runs
// end while it waits, and a read on one store costs a fraction of a
// refused claim on every store.
func (ad *admission) fireChecked(j *job, t time.Time) {
	w := &admitWaiter{deadline: j.dueAt(t).Add(ad.lateness), j: j, t: t, recheck: true}
	ad.carryOut(ad.enter(w, ad.clock.Now()))
}

// admitCall waits for an admitted claim call under deadline (a started
// attempt's retry). It returns errStale when the call is shed, errStopping
// when the replica stops.
func (ad *admission) admitCall(deadline time.Time) error {
	w := &admitWaiter{deadline: deadline, ch: make(chan admitOutcome, 1)}
	ad.carryOut(ad.enter(w, ad.clock.Now()))
	switch <-w.ch {
	case admitShed:
		return errStale
	case admitStop:
		return errStopping
	}
	return nil
}

// admitDone ends an admitted call that took d and told sig.
func (ad *admission) admitDone(d time.Duration, sig admitSignal) {
	ad.carryOut(ad.done(ad.clock.Now(), d, sig))
}

// carryOut carries out admission decisions: a waiting attempt is woken;
// a slot not started is started holding its admission, shed through the
// attempt's exit (slot.skipped late, or the misfire policy), or, when the
// replica stops, dropped as attemptSlot drops it.
//
// A checked slot (a later candidate's or a fallback's) that is shed is
// dropped without a line, as a busy replica drops its fallback slots: its
// first candidate tried it first, and runs it or sheds it with its own
// slot.skipped line; were that one gone, the reconciler reports the slot
// missed. Measured in a burst of 10,000 slots, these lines were a tenth
// of the fleet's log bytes and most of its warnings, for slots that ran.
// A job whose misfire policy recovers slots keeps the shed (the policy
// decides), so that the slot keeps its recovery.
func (ad *admission) carryOut(ds []admitted) {
	dropped := 0
	defer func() {
		if dropped > 0 {
			ad.log.Debug("checked slots dropped: this replica is past its capacity; their first candidates decide them", "slots", dropped)
		}
	}()
	for _, d := range ds {
		w := d.w
		if w.ch != nil {
			w.ch <- d.o
			continue
		}
		switch d.o {
		case admitGo:
			j, t, recheck, deadline := w.j, w.t, w.recheck && w.queued, w.deadline
			if !ad.spawnDeep(func() { ad.attemptAdmitted(j, t, recheck, deadline) }) {
				ad.admitDone(0, admitUnsent)
			}
		case admitShed:
			if w.recheck && !w.j.spec.Misfire.Policy.recovers() {
				dropped++
				continue
			}
			ad.attempts.shed(w.j, w.t)
		}
	}
}

// attemptAdmitted attempts scheduled slot t of j, admitted: its first
// claim call is sent under the admission (the exit gives it back unused).
// recheck: a checked slot that waited for its turn, not attempted when the
// stores now show it handled.
func (ad *admission) attemptAdmitted(j *job, t time.Time, recheck bool, deadline time.Time) {
	tk := &ticket{}
	defer func() {
		if tk.take() {
			ad.admitDone(0, admitUnsent)
		}
	}()
	if recheck && ad.handledSince(j, t, deadline) {
		return
	}
	ad.attempts.attemptSlotWith(j, t, originScheduled, nil, tk)
}
