package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// The run of a slot that every step let through (attempt.go): the plugin
// under a context bound to the run's leases (kept alive by the watchdog),
// the job's timeout, the replace watch, the stop grace and the replica's
// shutdown, retried with exponential backoff; its life logged; its
// outcome the slot's history entry.

// run runs the slot the steps let through, and returns its outcome as
// the verdict. The run's parent is the scheduler's, and for a backfill or
// a manual run the caller's context too.
func (a *attempt) run() verdict {
	ap := a.ap
	parent := ap.runCtx
	if a.caller != nil {
		ctx, cancel := context.WithCancelCause(a.caller)
		defer cancel(nil)
		stop := context.AfterFunc(ap.runCtx, func() { cancel(context.Cause(ap.runCtx)) })
		defer stop()
		parent = ctx
	}
	if v := a.start(); v.act != actNext {
		return v
	}
	h, runErr := (&slotRun{a: a}).execute(parent)
	v := verdict{act: actRan, entry: &h}
	if h.Outcome == history.OutcomeSucceeded || a.origin.fired() {
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

// start declares the run's start on its leases (Lease.Start: the claim's
// renewals confirm it on the stores from here on, within a second, so
// that a run that dies later is reported abandoned, never as one that
// may not have started). A lease whose validity passed before the body
// could start — the replica was paused between the claim and now — may
// have been taken over and its slot reported by another replica by now:
// the body does not start, no run line is logged, only lock.lost and
// slot.skipped (slow_lock, as for an acquisition that left the lease no
// validity), and the claim is released where it is still ours. The
// slot's history is whoever settles it: the claim was never confirmed
// started, so it is reported as one that may have started, or, released
// here, missed or recovered as not run.
func (a *attempt) start() verdict {
	leases := a.held()
	// The job lease first: a claim is declared started only when the
	// whole run may start.
	for i := len(leases) - 1; i >= 0; i-- {
		if err := leases[i].Start(); err != nil {
			a.logLost((&slotRun{a: a}).runFields(runIdentity(a.leases())), leases, 0)
			return verdict{act: actRelease, reason: history.ReasonSlowLock,
				attrs: []any{"note", "its leases lapsed before the run could start (the replica was paused or starved): not run here"},
				err:   fmt.Errorf("scheduler: %s %s: %w before the run started", a.name, a.slot, err)}
		}
	}
	return goOn
}

// runIdentity is the run's id and fencing token. The id is the first
// lease's: a slot's claim carries it, so a run that is abandoned is
// reported under the id it started with; the token is the last lease's.
func runIdentity(leases []*locking.Lease) (runID string, token uint64) {
	return leases[0].Grant().ID, leases[len(leases)-1].Token()
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

// slotRun is the run of an attempt that every step let through: the
// plugin's execution, its context and its lines. It reads the attempt it
// belongs to and changes nothing of it: the run's outcome is the verdict.
type slotRun struct {
	a *attempt
}

// execute runs the plugin under ctx = parent ∧ leases ∧ timeout, with
// retries, and logs the run's life. It returns the outcome and the job's
// last error. It does not end the leases.
func (r *slotRun) execute(parent context.Context) (history.Entry, error) {
	a := r.a
	ap := a.ap
	leases := a.held()
	runID, token := runIdentity(a.leases())
	log := r.runLog(runID, token)
	ctx, span := ap.traceRun(parent, a.tctx, a.name, a.slot, a.origin, runID, token)
	ctx, cancel := r.runContext(ctx, leases)
	defer cancel(nil)

	started := ap.clock.Now()
	ap.fleet.runStarted(history.RunInfo{Job: a.name, Slot: a.slot, RunID: runID, Token: token, Replica: ap.cfg.Replica, Since: started.UTC()})
	defer ap.fleet.runEnded(runID)
	r.logStarted(log, started)
	outcome, attempt, runErr := r.tries(ctx, log, span, runID, token)
	dur := ap.clock.Now().Sub(started)
	a.logLost(log, leases, attempt)
	logOutcome(ctx, log, ap.scrub, outcome, attempt, dur, runErr)
	ap.metrics.RunFinished(a.name, outcome, dur)
	if a.origin != originManual {
		ap.metrics.JobOutcome(a.name, outcome, ap.clock.Now())
	}
	h := history.Entry{Slot: a.slot, Outcome: outcome, Replica: ap.cfg.Replica, RunID: runID, Token: token,
		Recovered: a.origin == originRecovered, Attempts: attempt, DurationMS: dur.Milliseconds()}
	switch outcome {
	case history.OutcomeFailed:
		h.ErrorClass = errorClass(runErr)
	case history.OutcomeCanceled:
		h.Reason = cancelReason(context.Cause(ctx))
		h.BySlot = replacedBy(context.Cause(ctx))
		h.ErrorClass = declaredErrorClass(runErr)
	}
	span.end(h, runErr)
	return h, runErr
}

// runFields is the logger of the lines about run runID with token.
func (r *slotRun) runFields(runID string, token uint64) *slog.Logger {
	a := r.a
	return a.ap.log.With("job", a.name, "slot", a.slot, "run_id", runID, "fencing_token", token)
}

// runLog is the logger of the run's lines; it logs that the slot was
// won (and, for a recovered slot, misfire.recovered).
func (r *slotRun) runLog(runID string, token uint64) *slog.Logger {
	a := r.a
	log := r.runFields(runID, token)
	switch a.origin {
	case originBackfill:
		log = log.With("backfill", true)
	case originRecovered:
		policy := string(a.j.spec.Misfire.Policy)
		log.Warn("running a missed slot (misfire policy "+policy+")", "event", evMisfireRecovered, "policy", policy)
	}
	// Debug: run.started, a moment later, carries the same fields, and at
	// the default level every byte goes to a billed log store.
	log.Debug(evSlotAcquired, "event", evSlotAcquired)
	return log
}

// runContext is ctx bound to the leases (each kept alive), the job's
// timeout, under overlap replace to a newer slot's request, and to the
// leases' validity when the job has a stop grace (grace.go).
func (r *slotRun) runContext(ctx context.Context, leases []*locking.Lease) (context.Context, context.CancelCauseFunc) {
	a := r.a
	ap := a.ap
	for _, l := range leases {
		ctx = l.Keep(ctx)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	if t := a.j.spec.Timeout; t > 0 {
		ap.spawn(func() {
			if ap.sleep(t, ctx.Done()) {
				cancel(ErrTimeout)
			}
		})
	}
	if a.j.spec.Overlap == OverlapReplace {
		fastFrom, newer := r.replaceWatch()
		ap.spawn(func() { ap.watchReplace(ctx, cancel, a.name, fastFrom, newer) })
	}
	ap.watchGrace(ctx, cancel, a.j.spec.Job, leases)
	return ctx, cancel
}

// replaceWatch is what the run of a replace job watches for (replace.go,
// step 2): a slot later than its own, polled fast from when another
// replica may fire the next one. A manual run or a backfill, started now
// whatever its slot, is replaced by a slot due after it started: the
// record always names a slot later than a backfilled one, which would
// cancel it at its first poll. A slot due at most MaxClockSkew before it
// started may have been won on a replica whose clock is that much
// behind, and wait for the job lease it took: it replaces it too (a
// scheduled slot is not dropped for a run that started about when it was
// due) — unless a store shows it handled: then its own run came and went
// before this one took the lease, and it waits for nothing (the
// simulation, seed 255790, canceled a trigger for a slot that had run).
func (r *slotRun) replaceWatch() (fastFrom time.Time, newer func(by time.Time) bool) {
	a := r.a
	ap := a.ap
	if a.origin != originManual && a.origin != originBackfill {
		return ap.nextMayFire(a.j, a.due), func(by time.Time) bool { return by.After(a.t) }
	}
	now := ap.clock.Now()
	started := now.Add(-ap.cfg.MaxClockSkew)
	var ran time.Time // a slot of the allowance found handled
	return ap.nextMayFire(a.j, started), func(by time.Time) bool {
		switch due := a.j.spec.Due(by); {
		case by.IsZero() || !due.After(started) || by.Equal(ran):
			return false
		case due.After(now):
			return true
		}
		if ap.handledSlot(a.name, by) {
			ran = by
			return false
		}
		return true
	}
}

// logStarted logs run.started: for a scheduled slot with its delay from
// the due time (with jitter the slot was meant to start then).
func (r *slotRun) logStarted(log *slog.Logger, started time.Time) {
	a := r.a
	attrs := []any{"event", evRunStarted, "attempt", 1}
	if a.origin == originScheduled {
		delay := started.Sub(a.due)
		a.ap.metrics.StartDelay(a.name, delay)
		attrs = append(attrs, "start_delay_ms", float64(delay.Microseconds())/1000)
	}
	if a.origin != originManual && a.j.spec.Jitter > 0 {
		attrs = append(attrs, "jitter_ms", jitterOffset(a.name, a.t, a.j.spec.Jitter).Milliseconds())
	}
	// The message is the event's name: the shortest one the JSON lines
	// (which always carry msg) can have, and the text lines show the
	// event first.
	log.Info(evRunStarted, attrs...)
}

// tries runs the plugin until an attempt succeeds, the run is
// canceled, or the retries are spent; it returns the outcome, the last
// attempt's number and its error.
func (r *slotRun) tries(ctx context.Context, log *slog.Logger, span *runSpan, runID string, token uint64) (history.Outcome, int, error) {
	a := r.a
	ap, spec := a.ap, a.j.spec
	for attempt := 1; ; attempt++ {
		run := jobs.Run{
			Job: a.name, Manual: a.origin == originManual, RunID: runID, Replica: ap.cfg.Replica,
			FencingToken: token, Attempt: attempt, Logger: log.With("attempt", attempt),
		}
		if a.origin != originManual {
			run.Slot = a.t.UTC()
		}
		runErr := jobs.Execute(ctx, spec.Job, run)
		switch {
		case runErr == nil:
			return history.OutcomeSucceeded, attempt, nil
		case ctx.Err() != nil:
			return history.OutcomeCanceled, attempt, runErr
		case attempt > spec.Retry.Max:
			return history.OutcomeFailed, attempt, runErr
		}
		wait := backoff(spec.Retry.Backoff, attempt)
		span.retry(attempt, runErr, wait)
		log.Warn("run attempt failed; retrying", "event", evRunRetrying, "attempt", attempt,
			"error", ap.scrub.String(runErr.Error()), "backoff", wait.String())
		if !ap.sleep(wait, ctx.Done()) {
			return history.OutcomeCanceled, attempt, runErr
		}
	}
}

// logLost logs one lock.lost line per run, however many of its leases
// were lost (typically the claim and the job lease expire together):
// key names the first, lost_keys all of them when more than one.
func (a *attempt) logLost(log *slog.Logger, leases []*locking.Lease, attempt int) {
	var lostKeys []string
	for _, l := range leases {
		select {
		case <-l.Lost():
			lostKeys = append(lostKeys, l.Grant().Key.Name)
		default:
		}
	}
	if len(lostKeys) == 0 {
		return
	}
	a.ap.metrics.LeaseLost(a.name)
	attrs := []any{"event", evLockLost, "key", lostKeys[0], "attempt", attempt}
	if len(lostKeys) > 1 {
		attrs = append(attrs, "lost_keys", lostKeys)
	}
	log.Error("lease lost: could not renew it on a majority before it expired", attrs...)
}

// logOutcome logs the run's end: run.succeeded, run.failed or
// run.canceled (with the cancel reason, and the slot that replaced it).
func logOutcome(ctx context.Context, log *slog.Logger, scrub *jobs.Scrubber, outcome history.Outcome, attempt int, dur time.Duration,
	runErr error) {
	switch outcome {
	case history.OutcomeSucceeded:
		log.Info(evRunSucceeded, "event", evRunSucceeded, "attempt", attempt, "duration_ms", dur.Milliseconds())
	case history.OutcomeFailed:
		log.Error("run failed", "event", evRunFailed, "attempt", attempt, "duration_ms", dur.Milliseconds(),
			"error", scrub.String(runErr.Error()), "error_class", errorClass(runErr))
	case history.OutcomeCanceled:
		attrs := []any{"event", evRunCanceled, "reason", cancelReason(context.Cause(ctx)),
			"attempt", attempt, "duration_ms", dur.Milliseconds()}
		if by := replacedBy(context.Cause(ctx)); by != "" {
			attrs = append(attrs, "by_slot", by)
		}
		if runErr != nil {
			attrs = append(attrs, "error", scrub.String(runErr.Error()))
		}
		if class := declaredErrorClass(runErr); class != "" {
			attrs = append(attrs, "error_class", class)
		}
		log.Warn("run canceled", attrs...)
	}
}
