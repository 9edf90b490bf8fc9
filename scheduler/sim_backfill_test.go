package scheduler_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// The fault plan's operators beside the replicas: backfills (some killed
// mid-body), reconciler passes from processes of their own (some killed
// mid-pass), pauses and resumes while every replica is down, and pause
// writes that reach one store (their command failed).

// opsProcess starts a fresh process named prefix-<n> and returns it and
// the number of processes of that kind so far.
func (w *world) opsProcess(prefix string) *instance {
	w.mu.Lock()
	w.opsSeq++
	name := fmt.Sprintf("%s-%d", prefix, w.opsSeq)
	w.mu.Unlock()
	return w.process(name, 0)
}

// kill ends process in at once, as a SIGKILL: it sends nothing more.
func (w *world) kill(in *instance, cancel context.CancelFunc) {
	if !in.gate.Alive() {
		return
	}
	in.mu.Lock()
	in.died = time.Now()
	in.mu.Unlock()
	in.gate.Kill()
	cancel()
}

// backfill runs `slotlock backfill` of a random job over a past window of
// up to half an hour that the replicas no longer fire.
func (w *world) backfill() {
	job := w.cfg.jobs[w.pick(len(w.cfg.jobs))].name
	span := w.between(time.Minute, 30*time.Minute)
	w.runBackfill(job, func(to time.Time) time.Time { return to.Add(-span) }, time.Time{})
}

// runBackfill backfills job from from(to) to until (zero: as late as
// the replicas let it, to) in a fresh process; one in three is killed 0–30
// s in (often in a slot's body, before or after it confirmed its start).
func (w *world) runBackfill(job string, from func(to time.Time) time.Time, until time.Time) {
	w.mu.Lock()
	stopped := w.stopped
	w.mu.Unlock()
	if stopped {
		return
	}
	in := w.opsProcess("backfill")
	killAt := time.Duration(-1)
	if w.pick(3) == 0 {
		killAt = w.between(0, 30*time.Second)
	}
	w.mu.Lock()
	w.backfills++
	w.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	if killAt >= 0 {
		w.after(killAt, func() {
			w.mu.Lock()
			w.backfillsKilled++
			w.mu.Unlock()
			w.kill(in, cancel)
		})
	}
	w.wg.Go(func() {
		defer close(in.done)
		defer cancel()
		to := time.Now().Add(-in.sched.BackfillAfter(job) - time.Second)
		if !until.IsZero() && until.Before(to) {
			to = until
		}
		start := from(to)
		if !start.Before(to) {
			return
		}
		pctx, pcancel := context.WithTimeout(ctx, 10*time.Second)
		plan, err := in.sched.PlanBackfill(pctx, job, start, to)
		pcancel()
		if err != nil {
			return
		}
		for _, b := range plan {
			if !b.Run || ctx.Err() != nil || !in.gate.Alive() {
				continue
			}
			w.mu.Lock()
			w.backfilled[slotKey{job, b.Slot.UTC().Format(time.RFC3339)}] = true
			w.mu.Unlock()
			_, _ = in.sched.RunSlot(ctx, job, b.Slot)
		}
	})
}

// reconcile runs one reconciler pass from a fresh process (a replica that
// starts and is gone), killed mid-pass one time in three.
func (w *world) reconcile() {
	in := w.opsProcess("reconcile")
	w.mu.Lock()
	w.reconciles++
	w.mu.Unlock()
	if w.pick(3) == 0 {
		w.after(w.between(0, 5*time.Second), func() { w.kill(in, func() {}) })
	}
	w.wg.Go(func() {
		defer close(in.done)
		in.sched.ReconcilePass(in.born)
	})
}

// setPause writes a pause (or a resume) of job from a fresh process and
// records it for the checker (pausedAt): a resume ends the pause in force
// at its write; a pause without an end lasts until resumed.
func (w *world) setPause(job string, p locking.Pause) {
	in := w.opsProcess("pauser")
	defer close(in.done)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	from := time.Now()
	p.By = in.name
	got, err := in.locker.SetPause(ctx, job, p)
	rec := pauseRec{job: job, from: from, acked: time.Now(), until: p.Until, failed: err != nil}
	switch {
	case !p.Paused:
		rec.until = from
	case err == nil && !got.Until.IsZero():
		rec.until = got.Until
	case p.Until.IsZero():
		rec.until = from.Add(1000 * time.Hour)
	}
	w.mu.Lock()
	w.pauses = append(w.pauses, rec)
	w.mu.Unlock()
}

// outagePause stops every replica, pauses a job and resumes it before any
// replica is back: no replica fires its slots while it is paused, so
// only the pause register (its past pauses) says they were paused.
func (w *world) outagePause() {
	job := w.cfg.jobs[w.pick(len(w.cfg.jobs))].name
	d := w.between(2*time.Minute, 8*time.Minute)
	for _, rep := range w.reps {
		w.crash(rep, d+w.between(5*time.Second, time.Minute))
	}
	w.mu.Lock()
	w.outagePauses++
	w.mu.Unlock()
	began := time.Now()
	later := w.between(20*time.Minute, 50*time.Minute)
	w.wg.Go(func() {
		time.Sleep(w.between(time.Second, 10*time.Second))
		w.setPause(job, locking.Pause{Paused: true, Reason: "outage"})
		time.Sleep(d - 15*time.Second)
		w.setPause(job, locking.Pause{})
	})
	// The operator backfills the outage's window once it can: its slots
	// before the pause and after the resume were missed, those between
	// were paused.
	end := began.Add(d + 2*time.Minute)
	for _, jd := range w.cfg.jobs {
		w.after(later, func() {
			w.runBackfill(jd.name, func(time.Time) time.Time { return began.Add(-time.Minute) }, end)
		})
	}
}

// partialPause is a pause or a resume whose command failed after its
// write reached one store: the register differs between the stores until
// a reader repairs it.
func (w *world) partialPause() {
	job := w.cfg.jobs[w.pick(len(w.cfg.jobs))].name
	store := w.pick(w.cfg.stores)
	paused := w.pick(2) == 0
	until := w.between(time.Minute, 10*time.Minute)
	in := w.opsProcess("pauser")
	w.mu.Lock()
	w.partialPauses++
	w.mu.Unlock()
	w.wg.Go(func() {
		defer close(in.done)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		from := time.Now()
		cur, err := in.locker.ReadPause(ctx, job)
		if err != nil {
			return
		}
		p := locking.Pause{Paused: paused, By: in.name, Version: max(cur.Version+1, in.clock.Now().UnixMilli())}
		rec := pauseRec{job: job, from: from, until: from, failed: true}
		if paused {
			p.Until = in.clock.Now().Add(until)
			rec.until = from.Add(until)
		}
		p = cur.Succeed(p)
		op := locking.PauseOp{Key: "sim:{" + job + "}:pause", Value: locking.FormatPause(p), N: p.Version}
		w.mu.Lock()
		w.pauses = append(w.pauses, rec)
		w.mu.Unlock()
		_, _ = w.net.Nodes(in.name, in.gate)[store].Do(ctx, op)
	})
}

// checkMissed is the missed invariant for slot k, reported missed by m,
// whose runs are rs: a plain report (not may_have_started) at most once,
// never for a slot that started before it nor while the job was surely
// paused; a may_have_started report at most once for the run it names,
// which could not confirm its start. A backfill may run a slot after its
// plain report (that is what backfill is for), never after a
// may_have_started one of another run.
func (w *world) checkMissed(k slotKey, m []auditRec, rs []*runRec, surelyPaused bool) (viol []string) {
	var plain []auditRec
	named := map[string]int{}
	for _, a := range m {
		if a.mayHaveStarted {
			named[a.runID]++
		} else {
			plain = append(plain, a)
		}
	}
	if len(plain) > 1 {
		viol = append(viol, fmt.Sprintf("missed: %s %s reported missed %d times", k.job, k.slot, len(plain)))
	}
	for id, n := range named {
		if n > 1 {
			viol = append(viol, fmt.Sprintf("missed: %s %s reported missed, may have started (run %s), %d times", k.job, k.slot, id, n))
		}
	}
	for _, r := range rs {
		switch {
		case named[r.runID] > 0:
			if !w.couldNotConfirm(r) {
				viol = append(viol, fmt.Sprintf("missed: %s %s reported missed, may have started, but run %s started and could confirm it",
					k.job, k.slot, describeRuns([]*runRec{r})))
			}
		case w.backfillAfter(r, plain, m):
		case len(plain) > 0:
			viol = append(viol, fmt.Sprintf("missed: %s %s reported missed (%s) but it started (%s)", k.job, k.slot, plain[0].reason,
				describeRuns([]*runRec{r})))
		default:
			viol = append(viol, fmt.Sprintf("missed: %s %s reported missed, may have started (run %s), but run %s started",
				k.job, k.slot, m[0].runID, describeRuns([]*runRec{r})))
		}
	}
	if len(plain) > 0 && len(rs) == 0 && surelyPaused {
		viol = append(viol, fmt.Sprintf("missed: %s %s reported missed (%s) while the job was paused", k.job, k.slot, plain[0].reason))
	}
	return viol
}

// backfillAfter reports whether r is a backfill's run that started after
// a plain missed report of its slot and after no may_have_started report
// naming another run (that slot may have run: never again).
func (w *world) backfillAfter(r *runRec, plain, m []auditRec) bool {
	if !w.isBackfill(r.inst) || len(plain) == 0 || !plain[0].at.Before(r.start) {
		return false
	}
	for _, a := range m {
		if a.mayHaveStarted && a.runID != r.runID && a.at.Before(r.start) {
			return false
		}
	}
	return true
}

func (w *world) isBackfill(in *instance) bool { return strings.HasPrefix(in.name, "backfill-") }

// backfillOfMissed reports whether slot k's abandoned and missed reports
// are honest together: every abandoned run is a backfill's run of a slot
// reported missed before it started.
func (w *world) backfillOfMissed(k slotKey, abandoned, m []auditRec, rs []*runRec) bool {
	var plain []auditRec
	for _, a := range m {
		if !a.mayHaveStarted {
			plain = append(plain, a)
		}
	}
	for _, a := range abandoned {
		i := slices.IndexFunc(rs, func(r *runRec) bool { return r.runID == a.runID })
		if i < 0 || !w.backfillAfter(rs[i], plain, m) {
			return false
		}
	}
	return true
}

// backfillRuns counts the runs that backfills started, and the backfill
// processes killed.
func (w *world) backfillRuns() (runs, killed int) {
	w.rec.mu.Lock()
	for _, r := range w.rec.runs {
		if w.isBackfill(r.inst) {
			runs++
		}
	}
	w.rec.mu.Unlock()
	w.mu.Lock()
	killed = w.backfillsKilled
	w.mu.Unlock()
	return runs, killed
}
