package scheduler

import (
	"context"
	"fmt"
	"time"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"
)

// runSpec is one run to execute: a slot won (slot set) or a manual trigger.
type runSpec struct {
	j         *job
	slot      time.Time // zero when manual
	manual    bool
	recovered bool
	backfill  bool             // RunSlot: a past slot run on request
	leases    []*locking.Lease // the fencing token is the last one's
	parent    context.Context
	trace     context.Context // the attempt's span, the run's span's parent (trace.go); nil: parent's
}

// run runs the slot the steps let through, and returns its outcome as
// the verdict. The run's parent is the scheduler's, and for a backfill or
// a manual run the caller's context too.
func (a *attempt) run() verdict {
	s := a.s
	parent := s.runCtx
	if a.caller != nil {
		ctx, cancel := context.WithCancelCause(a.caller)
		defer cancel(nil)
		stop := context.AfterFunc(s.runCtx, func() { cancel(context.Cause(s.runCtx)) })
		defer stop()
		parent = ctx
	}
	h, runErr := s.execute(runSpec{j: a.j, slot: a.t, manual: a.origin == originManual, recovered: a.origin == originRecovered,
		backfill: a.origin == originBackfill, leases: a.leases(), parent: parent, trace: a.tctx})
	v := verdict{act: actRan, entry: &h}
	if h.Outcome == OutcomeSucceeded || a.origin.fired() {
		return v
	}
	if runErr == nil {
		runErr = context.Cause(parent)
	}
	if a.origin == originManual {
		v.err = fmt.Errorf("%w: %s %s: %v", ErrRunFailed, a.name, h.Outcome, runErr)
	} else {
		v.err = fmt.Errorf("%w: %s %s %s: %v", ErrRunFailed, a.name, a.slot, h.Outcome, runErr)
	}
	return v
}

// backoff is the wait after failed attempt n (1-based): Backoff * 2^(n-1),
// capped at 24h.
func backoff(base time.Duration, n int) time.Duration {
	const ceiling = 24 * time.Hour
	d := base
	for i := 1; i < n && d < ceiling; i++ {
		d *= 2
	}
	return min(d, ceiling)
}

// execute runs the plugin under ctx = parent ∧ leases ∧ timeout, with
// retries, and logs the run's life. It returns the outcome and the job's
// last error. It does not end the leases.
func (s *Scheduler) execute(r runSpec) (h HistoryEntry, runErr error) {
	var outcome string
	name := r.j.name()
	slot := SlotManual
	if !r.manual {
		slot = slotString(r.slot)
	}
	token := r.leases[len(r.leases)-1].Token()
	// The run id is the first lease's id: a slot's claim carries it, so a
	// run that is abandoned is reported under the id it started with.
	runID := r.leases[0].ID()
	log := s.log.With("job", name, "slot", slot, "run_id", runID, "fencing_token", token)
	if r.backfill {
		log = log.With("backfill", true)
	}
	if r.recovered {
		log.Warn("running a missed slot (misfire policy "+string(r.j.spec.Misfire.Policy)+")", "event", evMisfireRecovered,
			"policy", string(r.j.spec.Misfire.Policy))
	}
	// Debug: run.started, a moment later, carries the same fields, and at
	// the default level every byte goes to a billed log store.
	log.Debug("slot acquired", "event", evSlotAcquired)

	ctx, span := s.traceRun(r.parent, r, slot, runID, token)
	for _, l := range r.leases {
		ctx = l.Keep(ctx)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if t := r.j.spec.Timeout; t > 0 {
		s.spawn(func() {
			if s.sleep(t, ctx.Done()) {
				cancel(ErrTimeout)
			}
		})
	}
	if r.j.spec.Overlap == OverlapReplace {
		s.spawn(func() { s.watchReplace(ctx, cancel, r) })
	}
	s.watchGrace(ctx, cancel, r.j.spec.Job, r.leases)

	started := s.clock.Now()
	s.runStarted(RunInfo{Job: name, Slot: slot, RunID: runID, Token: token, Replica: s.cfg.Replica, Since: started.UTC()})
	defer s.runEnded(runID)
	startAttrs := []any{"event", evRunStarted, "attempt", 1}
	if !r.manual && !r.recovered && !r.backfill {
		// From the due time: with jitter the slot was meant to start then.
		delay := started.Sub(r.j.spec.Due(r.slot))
		s.metrics.StartDelay(name, delay)
		startAttrs = append(startAttrs, "start_delay_ms", float64(delay.Microseconds())/1000)
	}
	if !r.manual && r.j.spec.Jitter > 0 {
		startAttrs = append(startAttrs, "jitter_ms", JitterOffset(name, r.slot, r.j.spec.Jitter).Milliseconds())
	}
	log.Info("run started", startAttrs...)

	// The body starts now: the claim's renewals confirm it on the stores
	// from here on (within a second), so that a run that dies later is
	// reported abandoned, never as one that may not have started.
	r.leases[0].Start()
	attempt := 1
	for {
		run := jobs.Run{
			Job: name, Manual: r.manual, RunID: runID, Replica: s.cfg.Replica,
			FencingToken: token, Attempt: attempt, Logger: log.With("attempt", attempt),
		}
		if !r.manual {
			run.Slot = r.slot.UTC()
		}
		runErr = jobs.Execute(ctx, r.j.spec.Job, run)
		if runErr == nil {
			outcome = OutcomeSucceeded
			break
		}
		if ctx.Err() != nil {
			outcome = OutcomeCanceled
			break
		}
		if attempt > r.j.spec.Retry.Max {
			outcome = OutcomeFailed
			break
		}
		wait := backoff(r.j.spec.Retry.Backoff, attempt)
		span.retry(attempt, runErr, wait)
		log.Warn("run attempt failed; retrying", "event", evRunRetrying, "attempt", attempt,
			"error", s.scrub.String(runErr.Error()), "backoff", wait.String())
		if !s.sleep(wait, ctx.Done()) {
			outcome = OutcomeCanceled
			break
		}
		attempt++
	}
	dur := s.clock.Now().Sub(started)
	// One lock.lost line per run, however many of its leases were lost
	// (typically the slot lock and the job lease expire together): key
	// names the first, lost_keys all of them when more than one.
	var lostKeys []string
	for _, l := range r.leases {
		select {
		case <-l.Lost():
			lostKeys = append(lostKeys, l.Key().Name)
		default:
		}
	}
	if len(lostKeys) > 0 {
		s.metrics.LeaseLost(name)
		attrs := []any{"event", evLockLost, "key", lostKeys[0], "attempt", attempt}
		if len(lostKeys) > 1 {
			attrs = append(attrs, "lost_keys", lostKeys)
		}
		log.Error("lease lost: could not renew it on a majority before it expired", attrs...)
	}
	switch outcome {
	case OutcomeSucceeded:
		log.Info("run succeeded", "event", evRunSucceeded, "attempt", attempt, "duration_ms", dur.Milliseconds())
	case OutcomeFailed:
		log.Error("run failed", "event", evRunFailed, "attempt", attempt, "duration_ms", dur.Milliseconds(),
			"error", s.scrub.String(runErr.Error()), "error_class", errorClass(runErr))
	case OutcomeCanceled:
		attrs := []any{"event", evRunCanceled, "reason", cancelReason(context.Cause(ctx)),
			"attempt", attempt, "duration_ms", dur.Milliseconds()}
		if by := replacedBy(context.Cause(ctx)); by != "" {
			attrs = append(attrs, "by_slot", by)
		}
		if runErr != nil {
			attrs = append(attrs, "error", s.scrub.String(runErr.Error()))
		}
		log.Warn("run canceled", attrs...)
	}
	s.metrics.RunFinished(name, outcome, dur)
	if !r.manual {
		s.metrics.JobOutcome(name, outcome, s.clock.Now())
	}
	h = HistoryEntry{Slot: slot, Outcome: outcome, Replica: s.cfg.Replica, RunID: runID, Token: token, Recovered: r.recovered,
		Attempts: attempt, DurationMS: dur.Milliseconds()}
	switch outcome {
	case OutcomeFailed:
		h.ErrorClass = errorClass(runErr)
	case OutcomeCanceled:
		h.Reason = cancelReason(context.Cause(ctx))
		h.BySlot = replacedBy(context.Cause(ctx))
	}
	span.end(h, runErr)
	return h, runErr
}
