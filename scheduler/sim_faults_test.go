package scheduler_test

import (
	"context"
	"errors"
	"fmt"

	"sync"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler"
)

// fault is one injected fault: what, and the interval it lasted.
type fault struct {
	kind, detail string
	from, to     time.Time // to zero: still going on
}

type faultLog struct {
	mu     sync.Mutex
	faults []*fault
}

func (l *faultLog) open(kind, detail string) *fault {
	f := &fault{kind: kind, detail: detail, from: time.Now()}
	l.mu.Lock()
	l.faults = append(l.faults, f)
	l.mu.Unlock()
	return f
}

func (l *faultLog) close(f *fault) {
	l.mu.Lock()
	f.to = time.Now()
	l.mu.Unlock()
}

// quiet reports whether no fault touched [from, to].
func (l *faultLog) quiet(from, to time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.faults {
		if !f.from.After(to) && (f.to.IsZero() || !f.to.Before(from)) {
			return false
		}
	}
	return true
}

// counts returns the number of faults by kind.
func (l *faultLog) counts() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := map[string]int{}
	for _, f := range l.faults {
		m[f.kind]++
	}
	return m
}

// The fault kinds the plan draws from, with their weights.
var faultKinds = []struct {
	kind   string
	weight int
}{
	{"crash", 4},       // a replica dies at any instant, and restarts 0.5–90 s later
	{"pause", 3},       // a replica freezes for 1–4 lock TTLs
	{"stall", 2},       // a replica freezes for 2 % to 100 % of a lock TTL (a GC pause, a starved CPU): around its renewals and its checks of validity
	{"store", 2},       // a store refuses connections for 1–60 s, then comes back with its data
	{"partition", 1},   // a replica loses one or two stores for 1–60 s
	{"oneway", 1},      // a replica hears no answer from one or two stores for 1–60 s while they run its requests (an asymmetric partition)
	{"slow", 2},        // a store answers 50–400 ms late (past op_timeout) for 1–30 s
	{"loss", 2},        // 5 % of requests lost, 3 % executed 0.2–2 s late with no answer, for 5–60 s
	{"freeze", 2},      // a store runs nothing for 0.2–20 s (its callers time out), then replays its queue in a seeded random order
	{"trigger", 2},     // a fresh process runs `slotlock trigger` for a job
	{"pausejob", 1},    // a fresh process pauses a job for 1–10 minutes (slotlock pause --for)
	{"reload", 1},      // a replica reloads its jobs (SIGHUP) with every job's timeout changed
	{"backfill", 2},    // a fresh process backfills up to 30 minutes of a job's past slots; one in three is killed 0–30 s in
	{"reconcile", 1},   // a fresh process runs one reconciler pass; one in three is killed 0–5 s in
	{"outagepause", 1}, // every replica crashes for 2–9 minutes; meanwhile a job is paused and resumed
	{"pausewrite", 1},  // a pause or resume reaches one store (its command failed)
}

func (w *world) between(lo, hi time.Duration) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return lo + time.Duration(w.rng.Int64N(int64(hi-lo)+1))
}

func (w *world) pick(n int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.rng.IntN(n)
}

// drive injects faults until the end of the run.
func (w *world) drive(end time.Time) {
	total := 0
	for _, k := range faultKinds {
		total += k.weight
	}
	for {
		w.mu.Lock()
		gap := time.Duration(w.rng.ExpFloat64() * float64(w.cfg.faultGap))
		w.mu.Unlock()
		time.Sleep(gap)
		if !time.Now().Before(end) {
			return
		}
		n := w.pick(total)
		kind := ""
		for _, k := range faultKinds {
			if n < k.weight {
				kind = k.kind
				break
			}
			n -= k.weight
		}
		w.inject(kind)
	}
}

// heal runs f after d, on a tracked goroutine.
func (w *world) after(d time.Duration, f func()) {
	w.wg.Go(func() {
		time.Sleep(d)
		f()
	})
}

func (w *world) inject(kind string) {
	switch kind {
	case "crash":
		w.crash(w.reps[w.pick(len(w.reps))], w.between(500*time.Millisecond, 90*time.Second))
	case "pause", "stall":
		rep := w.reps[w.pick(len(w.reps))]
		in := w.current(rep)
		if in == nil || in.gate.Paused() {
			return
		}
		d := w.between(w.cfg.ttl, 4*w.cfg.ttl)
		if kind == "stall" {
			d = w.between(w.cfg.ttl/50, w.cfg.ttl)
		}
		f := w.faults.open(kind, rep.name)
		in.mu.Lock()
		in.pauses = append(in.pauses, [2]time.Time{time.Now()})
		in.mu.Unlock()
		in.gate.Pause()
		w.after(d, func() {
			in.mu.Lock()
			in.pauses[len(in.pauses)-1][1] = time.Now()
			in.mu.Unlock()
			in.gate.Resume()
			w.faults.close(f)
		})
	case "store":
		i := w.pick(w.cfg.stores)
		f := w.faults.open(kind, fmt.Sprint(i))
		w.net.SetDown(i, true)
		w.after(w.between(time.Second, time.Minute), func() { w.net.SetDown(i, false); w.faults.close(f) })
	case "partition", "oneway":
		rep := w.reps[w.pick(len(w.reps))]
		stores := []int{w.pick(w.cfg.stores)}
		if w.pick(3) == 0 {
			stores = append(stores, (stores[0]+1)%w.cfg.stores)
		}
		set := w.net.SetCut
		if kind == "oneway" {
			set = w.net.SetAnswersLost
		}
		f := w.faults.open(kind, fmt.Sprint(rep.name, stores))
		for _, i := range stores {
			set(rep.name, i, true)
		}
		w.after(w.between(time.Second, time.Minute), func() {
			for _, i := range stores {
				set(rep.name, i, false)
			}
			w.faults.close(f)
		})
	case "slow":
		i := w.pick(w.cfg.stores)
		f := w.faults.open(kind, fmt.Sprint(i))
		w.net.SetSlow(i, w.between(50*time.Millisecond, 400*time.Millisecond))
		w.after(w.between(time.Second, 30*time.Second), func() { w.net.SetSlow(i, 0); w.faults.close(f) })
	case "loss":
		f := w.faults.open(kind, "")
		w.net.SetLoss(0.05, 0.03, w.between(200*time.Millisecond, 2*time.Second))
		w.after(w.between(5*time.Second, time.Minute), func() { w.net.SetLoss(0, 0, 0); w.faults.close(f) })
	case "freeze":
		i := w.pick(w.cfg.stores)
		f := w.faults.open(kind, fmt.Sprint(i))
		w.net.SetFrozen(i, true)
		w.after(w.between(200*time.Millisecond, 20*time.Second), func() { w.net.SetFrozen(i, false); w.faults.close(f) })
	case "pausejob":
		job := w.cfg.jobs[w.pick(len(w.cfg.jobs))].name
		d := w.between(time.Minute, 10*time.Minute)
		in := w.process(fmt.Sprintf("ops-%d", w.pick(1_000_000)), 0)
		w.wg.Go(func() {
			defer close(in.done)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			from := time.Now()
			p, err := in.locker.SetPause(ctx, job, locking.Pause{Paused: true, Until: from.Add(d), By: in.name})
			w.mu.Lock()
			defer w.mu.Unlock()
			if err == nil {
				// From when the write began to its end: slots in between
				// may be paused; slots well inside it must be.
				w.pauses = append(w.pauses, pauseRec{job: job, from: from, until: p.Until, acked: time.Now()})
			} else {
				w.pauses = append(w.pauses, pauseRec{job: job, from: from, until: from.Add(d), failed: true})
			}
		})
	case "reload":
		// A hot reload at any instant: every job changes (its timeout, 10
		// or 11 minutes), which swaps every job of the replica's set while
		// slots fire, runs go on and faults come and go; the invariants
		// must not notice.
		rep := w.reps[w.pick(len(w.reps))]
		in := w.current(rep)
		if in == nil || !in.gate.Alive() {
			return
		}
		timeout := 10*time.Minute + time.Duration(w.pick(2))*time.Minute
		w.mu.Lock()
		w.reloads++
		w.mu.Unlock()
		w.traceNote(in, "reload.begin")
		w.wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			defer w.traceNote(in, "reload.end")
			if _, err := in.sched.Reload(ctx, "", w.specs(in, timeout)); err != nil &&
				!errors.Is(err, scheduler.ErrStopped) && ctx.Err() == nil && in.gate.Alive() {
				w.t.Errorf("reload of %s: %v", in.name, err)
			}
		})
	case "backfill":
		w.backfill()
	case "reconcile":
		w.reconcile()
	case "outagepause":
		w.outagePause()
	case "pausewrite":
		w.partialPause()
	case "trigger":
		w.mu.Lock()
		w.triggers++
		name := fmt.Sprintf("trigger-%d", w.triggers)
		w.mu.Unlock()
		job := w.cfg.jobs[w.pick(len(w.cfg.jobs))].name
		in := w.process(name, 0)
		w.wg.Go(func() {
			defer close(in.done)
			_ = in.sched.Trigger(context.Background(), job)
		})
	}
}

// crash kills rep's process at once and starts a new one after restart.
func (w *world) crash(rep *replica, restart time.Duration) {
	in := w.current(rep)
	if in == nil || !in.gate.Alive() {
		return
	}
	f := w.faults.open("crash", rep.name)
	in.mu.Lock()
	in.died = time.Now()
	in.mu.Unlock()
	in.gate.Kill()
	in.cancel()
	w.setCurrent(rep, nil)
	w.after(restart, func() {
		w.mu.Lock()
		stopped := w.stopped
		w.mu.Unlock()
		if !stopped {
			w.startReplica(rep)
		}
		w.faults.close(f)
	})
}

// stop stops every replica gracefully and waits for every goroutine.
func (w *world) stop() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	for _, rep := range w.reps {
		if in := w.current(rep); in != nil {
			in.cancel()
		}
	}
	w.wg.Wait()
}

// run runs the world for its duration: replicas start, faults come and go,
// then every process stops gracefully and every goroutine has returned.
func (w *world) run() {
	for _, rep := range w.reps {
		w.startReplica(rep)
	}
	end := w.start.Add(w.cfg.duration)
	w.drive(end)
	time.Sleep(time.Until(end))
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	// Let pending heals and restarts happen, then stop everyone.
	time.Sleep(2 * time.Minute)
	w.stop()
}

// traceNote adds what the fault plan did to process in to the trace (an
// audit record no check reads), at this instant.
func (w *world) traceNote(in *instance, what string) {
	w.rec.mu.Lock()
	w.rec.audits = append(w.rec.audits, auditRec{at: time.Now(), inst: in, event: what, replica: in.name})
	w.rec.mu.Unlock()
}
