package scheduler

import (
	"context"
	"errors"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"
)

// The slots of a definition a reload replaced. A job rescheduled here
// (schedule, zone, jitter) is judged under its new definition from the
// reload on; the slots its old definitions fired before — up to the
// reload, and under the latest of them only those before its next slot
// then (job.floorFrom: the new definition fires that one and the rest) —
// are judged under the definition that fired them, oldest first, before
// the pass moves on to the new one. They were skipped: a slot the old
// definition had left without an outcome just before a reload was never
// judged, without a line.

// errReplacedPending: slots of a replaced definition are not all judged
// yet (too recent, or one's claim is still open); the job's pass waits.
var errReplacedPending = errors.New("scheduler: slots of a replaced definition not judged yet")

// replacedJudged judges the slots after from that j's replaced
// definitions fired, as far as they are old enough at now. It returns
// errReplacedPending while some of them are left to judge.
func (p *pass) replacedJudged(ctx context.Context, j *job, from, now time.Time) error {
	for i := len(j.replaced) - 1; i >= 0; i-- {
		old, next := j.replaced[i], j
		if i > 0 {
			next = j.replaced[i-1]
		}
		upto := next.since.Add(-time.Second) // a slot at the reload is the new one's
		if !next.floorFrom.IsZero() && next.floorFrom.Add(-time.Second).Before(upto) {
			upto = next.floorFrom.Add(-time.Second)
		}
		if !later(from, old.since).Before(upto) || old.spec.Disabled {
			continue
		}
		judged, err := p.judgeOld(ctx, old, later(from, old.since), upto, now)
		if err != nil {
			return err
		}
		if n := old.spec.Schedule.Next(judged); !n.IsZero() && !n.After(upto) {
			return errReplacedPending
		}
		from = later(from, upto)
	}
	return nil
}

// judgeOld judges old's slots in (from, upto] that are old enough at now,
// and moves the job's record past those judged; it returns the latest
// judged, or from when none.
func (p *pass) judgeOld(ctx context.Context, old *job, from, upto, now time.Time) (time.Time, error) {
	r := p.r
	if cut := now.Add(-r.after(old)); cut.Before(upto) {
		upto = cut
	}
	// Beyond a day the fleet's records no longer tell why a slot was
	// missed: such slots are reported unjudged, under the definition that
	// fired them, as the new definition's pass reports its own (pass.from).
	// (They were passed over without a line.)
	if cut := now.Add(-history.Retention); from.Before(cut) {
		if err := p.unjudged(ctx, old, from, minTime(cut, upto)); err != nil {
			return from, err
		}
		from = cut
	}
	slots := history.SlotsBetween(old.spec.Schedule, from, upto, max(1, r.cfg.HistoryKeep/2))
	if len(slots) == 0 {
		return from, nil
	}
	judged, err := p.judge(ctx, old, slots)
	if !judged.IsZero() {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
		_ = r.cfg.Locker.AdvanceRecord(actx, history.ReconciledKey(old.name()), judged.Unix())
		cancel()
		from = judged
	}
	return from, err
}

// replacedChain is what j, rescheduled from prev at now, keeps of the
// definitions it replaced: prev and prev's own, newest first, as long as
// they were in force within the reconciler's window (a day).
func replacedChain(prev *job, now time.Time) []*job {
	chain := []*job{prev}
	for i, old := range prev.replaced {
		end := prev.since
		if i > 0 {
			end = prev.replaced[i-1].since
		}
		if end.Before(now.Add(-history.Retention)) {
			break
		}
		chain = append(chain, old)
	}
	return chain
}
