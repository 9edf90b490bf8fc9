package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"

	"github.com/slotlock/slotlock/locking"
)

// A backfill reports the missed slot it is about to run. A slot with no
// entry is the reconciler's to judge, and it judges by reading the open
// claims, then the history again: no claim and no entry, and nobody runs
// a slot that old — but a backfill does. A pass that read the claims just
// before a backfill claimed the slot writes its missed entry while the
// backfill's run goes on, and logs slot.missed for a slot that is
// running (the simulation's seed 722066: 5 ms after run.started). So the
// backfill, holding the claim, judges such a slot itself first, as the
// pass would: the missed entry, added only where the slot has none
// (IfAbsent); whichever of the two adds it on a majority reports it, and
// the run starts after the report.

// judgedByBackfill is the note of a slot.missed written by a backfill.
const judgedByBackfill = "judged by the backfill that runs it, before its run"

// missedBeforeBackfill writes and reports the missed entry of the slot
// this backfill is about to run, which has no entry. Another's entry found
// there (the reconciler's, just written) decides as the history does.
func (a *attempt) missedBeforeBackfill() verdict {
	ap := a.ap
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	fleet, err := ap.pastFleet.read(ctx, ap.cfg.Locker, ap.clock.Now())
	if err != nil {
		return backfillHistoryErr(a.name, a.t, err)
	}
	e := missedEntry(a.t, ap.missedReason(fleet, a.t))
	err = ap.cfg.Locker.AppendLog(ctx, a.name, locking.LogAppend{Entry: e.LogEntry(a.t), Keep: ap.cfg.HistoryKeep, IfAbsent: true})
	switch {
	case err == nil:
		ap.missed(a.j, a.t, e, "backfill", true, "note", judgedByBackfill)
		return goOn
	case !errors.Is(err, locking.ErrLogHasEntry):
		return backfillHistoryErr(a.name, a.t, err)
	}
	got, found, err := ap.outcomes.slotRecorded(ctx, a.name, a.t)
	switch {
	case err != nil:
		return backfillHistoryErr(a.name, a.t, err)
	case found && !backfillable(&got):
		return recordedAlready(a.t, got)
	}
	return goOn // the reconciler's missed entry, reported by its pass
}

// backfillHistoryErr is the verdict on a backfill of slot t of the named
// job whose slot history did not answer: it cannot tell what became of
// the slot, so it does not run it.
func backfillHistoryErr(job string, t time.Time, err error) verdict {
	return verdict{act: actRelease, err: fmt.Errorf("scheduler: backfill %s %s: slot history: %w", job, slotString(t), err)}
}

// recordedAlready is the verdict on a backfill of slot t, whose history
// records outcome e: the backfill does not run it.
func recordedAlready(t time.Time, e history.Entry) verdict {
	return verdict{act: actDone, reason: history.ReasonDone,
		attrs: []any{"outcome", e.Outcome, "note", "the slot history records it"},
		err:   &HandledError{Slot: t, Reason: describeEntry(e), Entry: &e}}
}

// pastFleet is the fleet's records as a backfill judges missed slots by,
// read at most once a minute: a backfill asks about slots older than the
// reconciler's window, whose records seldom change.
type pastFleet struct {
	mu    sync.Mutex
	at    time.Time
	fleet history.Fleet
}

// pastFleetFor is how long a read of pastFleet serves.
const pastFleetFor = time.Minute

func (p *pastFleet) read(ctx context.Context, store history.Store, now time.Time) (history.Fleet, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.at.IsZero() && now.Sub(p.at) < pastFleetFor {
		return p.fleet, nil
	}
	f, err := history.ReadFleet(ctx, store)
	if err != nil {
		return history.Fleet{}, err
	}
	p.at, p.fleet = now, f
	return f, nil
}
