package scheduler_test

import (
	"context"
	"fmt"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/locksim"
	"github.com/slotlock/slotlock/locking/redlock"
	"github.com/slotlock/slotlock/scheduler"
	"github.com/slotlock/slotlock/scheduler/history"
)

// accountedSettle is how long before the end of a run the accounted
// invariant stops: the reconciler judges a slot after the hourly job's
// misfire deadline (30 min) and a few passes more.
const accountedSettle = 40 * time.Minute

// checkAccounted is the accounted invariant, checked once the world has
// stopped (its stores healed): every slot of the last day (from `from` on)
// up to the end less accountedSettle has exactly one entry in its job's history — ran,
// skipped, abandoned or missed — and the entry agrees with the ledger (a
// slot that started is never missed, skipped or paused; one that did not
// start is never succeeded, failed or canceled).
func (w *world) checkAccounted(from time.Time) (viol []string) {
	gate := locksim.NewGate(1)
	l, err := redlock.OnNodes(w.net.Nodes("auditor", gate), "sim", time.Second,
		locking.Options{Replica: "auditor", Clock: &locksim.Clock{Gate: gate}, Logger: discard})
	if err != nil {
		return []string{fmt.Sprintf("accounted: auditor: %v", err)}
	}
	defer l.Close()
	w.rec.mu.Lock()
	started := map[slotKey]bool{}
	for _, r := range w.rec.runs {
		started[slotKey{r.job, r.slot}] = true
	}
	w.rec.mu.Unlock()
	to := w.start.Add(w.cfg.duration - accountedSettle)
	if day := to.Add(-24 * time.Hour); from.Before(day) {
		from = day // the history keeps a day (simHistoryKeep)
	}
	for _, d := range w.cfg.jobs {
		h, err := history.ReadEntries(context.Background(), l, d.name, from, simHistoryKeep)
		if err != nil {
			viol = append(viol, fmt.Sprintf("accounted: %s: history: %v", d.name, err))
			continue
		}
		entries := map[string][]history.Entry{}
		for _, e := range h {
			entries[e.Slot] = append(entries[e.Slot], e)
		}
		sched, _ := scheduler.ParseSchedule(d.spec, time.UTC)
		for s := sched.Next(from.Add(-time.Nanosecond)); s.Before(to); s = sched.Next(s) {
			k := slotKey{d.name, s.UTC().Format(time.RFC3339)}
			es := entries[k.slot]
			w.mu.Lock()
			backfilled := w.backfilled[k]
			w.mu.Unlock()
			if len(es) > 1 && backfilled {
				// The reconciler's verdict and the backfill's outcome (or a
				// settler's, for a backfill killed in the body): judged by
				// their join, as backfill and status read them.
				j, _ := history.JoinAll(es)
				es = []history.Entry{j}
			}
			if len(es) != 1 {
				viol = append(viol, fmt.Sprintf("accounted: %s %s has %d history entries %v (started: %v)", k.job, k.slot, len(es), es, started[k]))
				continue
			}
			// abandoned: a run that started; missed with may_have_started:
			// either (its winner stopped before confirming).
			ran := es[0].Outcome == history.OutcomeSucceeded || es[0].Outcome == history.OutcomeFailed ||
				es[0].Outcome == history.OutcomeCanceled || es[0].Outcome == history.OutcomeAbandoned
			notRun := (es[0].Outcome == history.OutcomeMissed && !es[0].MayHaveStarted) || es[0].Outcome == history.OutcomeSkipped
			if (ran && !started[k]) || (notRun && started[k]) {
				viol = append(viol, fmt.Sprintf("accounted: %s %s: history says %s (%s), but the job %s", k.job, k.slot,
					es[0].Outcome, es[0].Reason, map[bool]string{true: "started it", false: "never started it"}[started[k]]))
			}
		}
	}
	return viol
}
