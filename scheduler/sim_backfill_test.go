package scheduler_test

import (
	"context"
	"fmt"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
)

// The fault plan's operators beside the replicas: backfills (some killed
// mid-body), reconciler passes from processes of their own (some killed
// mid-pass), pauses and resumes while every replica is down, and pause
// writes that reach one store (their command failed).

// Every draw of an operator's process (its name, whether and when it is
// killed) is made by the fault plan's goroutine when the fault is drawn:
// a process started later, on a goroutine of its own, draws nothing from
// the world's stream, whose order would then be the Go scheduler's.

// opsName is the name of a fresh process: prefix-<n>.
func (w *world) opsName(prefix string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.opsSeq++
	return fmt.Sprintf("%s-%d", prefix, w.opsSeq)
}

// opsPlan is a backfill process drawn by the fault plan: its name, and
// when it is killed (negative: never).
type opsPlan struct {
	name   string
	killAt time.Duration
}

// planBackfill draws a backfill process: one in three is killed 0–30 s in
// (often in a slot's body, before or after it confirmed its start).
func (w *world) planBackfill() opsPlan {
	p := opsPlan{name: w.opsName("backfill"), killAt: -1}
	if w.pick(3) == 0 {
		p.killAt = w.between(0, 30*time.Second)
	}
	return p
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
	w.runBackfill(w.planBackfill(), job, func(to time.Time) time.Time { return to.Add(-span) }, time.Time{})
}

// runBackfill backfills job from from(to) to until (zero: as late as the
// replicas let it, to) in the fresh process plan draws.
func (w *world) runBackfill(plan opsPlan, job string, from func(to time.Time) time.Time, until time.Time) {
	w.mu.Lock()
	stopped := w.stopped
	w.mu.Unlock()
	if stopped {
		return
	}
	in := w.process(plan.name, 0)
	killAt := plan.killAt
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
		slots, err := in.sched.PlanBackfill(pctx, job, start, to)
		pcancel()
		if err != nil {
			return
		}
		for _, b := range slots {
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
	in := w.process(w.opsName("reconcile"), 0)
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
func (w *world) setPause(name, job string, p locking.Pause) {
	in := w.process(name, 0)
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
	if time.Now().Add(d + 2*time.Minute).After(w.start.Add(w.cfg.duration)) {
		return // the replicas would be down past the end: nobody would judge the last slots
	}
	for _, rep := range w.reps {
		w.crash(rep, d+w.between(5*time.Second, time.Minute))
	}
	w.mu.Lock()
	w.outagePauses++
	w.mu.Unlock()
	began := time.Now()
	later := w.between(20*time.Minute, 50*time.Minute)
	wait := w.between(time.Second, 10*time.Second)
	pauser, resumer := w.opsName("pauser"), w.opsName("pauser")
	w.wg.Go(func() {
		time.Sleep(wait)
		w.setPause(pauser, job, locking.Pause{Paused: true, Reason: "outage"})
		time.Sleep(d - 15*time.Second)
		w.setPause(resumer, job, locking.Pause{})
	})
	// The operator backfills the outage's window once it can: its slots
	// before the pause and after the resume were missed, those between
	// were paused.
	end := began.Add(d + 2*time.Minute)
	for _, jd := range w.cfg.jobs {
		plan := w.planBackfill()
		w.after(later, func() {
			w.runBackfill(plan, jd.name, func(time.Time) time.Time { return began.Add(-time.Minute) }, end)
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
	in := w.process(w.opsName("pauser"), 0)
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
		op := driver.PauseOp{Key: "sim:{" + job + "}:pause", Value: driver.FormatPause(p), N: p.Version}
		w.mu.Lock()
		w.pauses = append(w.pauses, rec)
		w.mu.Unlock()
		_, _ = w.net.Nodes(in.name, in.gate)[store].Do(ctx, op)
	})
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
