package scheduler

import (
	"context"
	"errors"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// Missed-slot accounting. Every replica computes the same slots, so the
// fleet can tell which slots should have had an outcome. Every
// ReconcileEvery one replica — whoever takes the reconciler lease in
// history.FleetFamily — walks each job's slots from where the last pass stopped
// (the job's record "reconciled") up to ReconcileAfter ago, and for every
// slot without an entry in the slot history:
//
//   - whose claim is still open (a run going on, or an abandoned one not
//     yet settled): it stops there, and looks again next time; an
//     abandoned claim it settles at once (settleOrphan), as the next claim
//     of the job pointed to it would — which may never come;
//   - that the job's pause covers: it writes the paused entry (the
//     replicas that skipped it write it too; identical entries are one);
//   - otherwise it writes a missed entry and logs slot.missed (warn) and
//     counts slotlock_slots_missed_total, with the reason: no_quorum when
//     a replica recorded a lock-store outage around the slot, no_replica
//     when no replica's heartbeat covers it, else unknown.
//
// The entry is written on a majority before the event is logged, under
// the lease, and the record then moves past the slot: each missed slot is
// reported once, fleet-wide (a reconciler that dies between the two
// reports nothing for that slot: never twice). The write is fenced by the
// lease's token (the job family's register "reconciler": a reconciler
// that froze past its lease cannot write once its successor has) and
// made only where the slot has no entry yet: the one pass whose write
// added the entry on a majority reports it, whichever of two passes that
// overlapped in time wrote first. Slots older than a day
// (history.Retention), older than the history can hold, or from before the
// job's definitions first ran (pass.firstStart) are not judged; slots
// that grew older than a day before a pass could judge them (it stalled
// behind a claim open that long, or no pass ran) are logged once as
// reconcile.unjudged (warn), never dropped silently.

// reconciler is the component that judges slots with no outcome after the
// window. Its passes keep their own state (pass); across passes it keeps
// nothing: the fleet-wide record of how far it judged lives in the stores.
type reconciler struct {
	*engine
	// settle takes over an abandoned claim a pass finds open.
	settle orphanSettler
}

// orphanSettler settles an abandoned claim o of job j: run.abandoned, or
// a may-have-started miss (settlement).
type orphanSettler interface {
	settleOrphan(j *job, o *locking.Abandoned)
}

func newReconciler(e *engine, settle orphanSettler) *reconciler {
	return &reconciler{engine: e, settle: settle}
}

// loop runs a pass every ReconcileEvery until the scheduler stops.
func (r *reconciler) loop(started time.Time) {
	for r.sleep(r.cfg.ReconcileEvery, r.stopping) {
		r.pass(started)
	}
}

// pass runs one pass if this replica takes the reconciler's lease. The
// lease is left to expire (it lasts ReconcileEvery), so that about one
// pass runs per ReconcileEvery across the fleet.
func (r *reconciler) pass(started time.Time) {
	ctx := context.Background() // each call has its own timeout; the pass stops with the scheduler
	actx, acancel := context.WithTimeout(ctx, storeTimeout)
	lease, err := r.cfg.Locker.Acquire(actx, history.ReconcilerKey,
		max(r.cfg.ReconcileEvery, time.Second))
	acancel()
	if err != nil {
		return // another replica has it, or no majority answers
	}
	p := pass{r: r, lease: lease, started: started}
	for _, j := range r.jobList() {
		if r.isStopping() {
			return
		}
		if j.spec.Disabled || r.cfg.HistoryKeep <= 0 {
			continue
		}
		if err := p.job(ctx, j); err != nil {
			if !errors.Is(err, errPassOver) {
				r.log.Debug("reconciler: job not reconciled this time", "job", j.name(), "error", err.Error())
			}
			if errors.Is(err, errPassOver) {
				return
			}
		}
	}
}

// errPassOver: the reconciler's lease ran out (or is about to).
var errPassOver = errors.New("scheduler: reconciler lease over")

// pass is one reconciler pass.
type pass struct {
	r       *reconciler
	lease   *locking.Lease
	started time.Time
	fleet   *history.Fleet // read when first needed: most passes find nothing to judge
}

// readFleet returns the fleet's records, read once per pass.
func (p *pass) readFleet(ctx context.Context) (history.Fleet, error) {
	if p.fleet == nil {
		f, err := history.ReadFleet(ctx, p.r.cfg.Locker)
		if err != nil {
			return history.Fleet{}, err
		}
		p.fleet = &f
	}
	return *p.fleet, nil
}

// own keeps the lease: it renews it when half of it is gone, and fails
// when it cannot be sure to hold it for a store call more.
func (p *pass) own(ctx context.Context) error {
	left := p.lease.ValidUntil().Sub(p.r.clock.Now())
	if left > p.lease.Grant().TTL/2 {
		return nil
	}
	ectx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	if err := p.lease.Extend(ectx); err != nil {
		return errPassOver
	}
	return nil
}

// write adds e, the outcome of slot t of j, to the history, while the
// lease is held, fenced by its token and only where t has no entry yet:
// locking.ErrLogHasEntry when it did not add e on a majority (then
// another pass reports it), errPassOver when a newer reconciler wrote.
func (p *pass) write(ctx context.Context, j *job, e history.Entry, t time.Time) error {
	if err := p.own(ctx); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	err := p.r.cfg.Locker.AppendLog(wctx, j.name(), locking.LogAppend{Entry: e.LogEntry(t), Keep: p.r.cfg.HistoryKeep,
		Fence: history.ReconcilerFence, Token: p.lease.Token(), IfAbsent: true})
	if errors.Is(err, locking.ErrStaleToken) {
		return errPassOver
	}
	return err
}
