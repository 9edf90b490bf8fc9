package scheduler

import (
	"context"
	"fmt"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"
)

// The steps of a slot attempt that keep runs apart across a rolling
// change of a job's overlap policy between allow and forbid (or replace)
// — a reload or a restart, one replica after the other — while replicas
// run the job under both. A run under forbid or replace holds the job
// lease; a run under allow holds none, only its slot's claim. So each
// side looks for the other's:
//
//   - the side that takes the job lease (allowRuns) takes it, then reads
//     the job's open claims, and skips its slot if another slot's claim is
//     open — within its window: while it knows of a replica under allow;
//   - the allow side (leaseRuns) takes its slot's claim, then reads the
//     job lease, and skips its slot if a run holds it — on every slot:
//     a replica under allow learns of one under forbid only at its next
//     read of the fleet's definitions (defsBeats beats), and until then
//     nothing else would keep its runs from starting beside that one's;
//   - within its own window (it knows of a replica under forbid or
//     replace: learnDefinitions, or a reload), the allow side takes the
//     job lease as under forbid (takeJobLease): a replica under forbid
//     that does not know of it yet, and so reads no claims, finds the
//     lease held. Its runs then do not overlap each other either.
//
// The first two pair as Dekker's: each side writes its own mark on a
// majority (the lease, the claim) before it reads the other's mark from a
// majority (ReadClaims, ReadLease: the union of what a majority holds).
// Two majorities share a store. Say the allow side's read missed the
// lease: on a store both reached, its read came before the lease was
// written there; its claim was on a majority before that read began, so
// before the other side's claims read began — which therefore finds it on
// the store its majority shares with the claim's. So at least one side
// sees the other: both may skip, never both run. Hence allowRuns counts
// every other open claim, a newer slot's too: a newer slot's claim may be
// an allow run that read the lease before this slot took it. A replica
// whose first read of the fleet's definitions has not answered yet acts
// as within both windows (engine.defsUnread, inRollingWindow): its first
// slots may fire before that read. Two replicas of different policies
// that both read the definitions before either had published its own are
// not kept apart until one learns. A replica frozen past its lease is the
// contract's honest exception, as for forbid alone.

// The steps and their helpers are functions of the attempt, not methods,
// to keep attempt's method set small (TestEngineShape).

// allowRuns skips a slot that holds the job lease for overlap, for a
// while after the job's overlap was allow here (a reload) or on another
// replica (learnDefinitions), while a run of another slot of the job is
// going on (its claim is open): started under allow, it holds no job
// lease, so the job lease alone would let this slot run beside it. An
// open claim of a dead run counts too until it is settled; so does a
// newer slot's claim that waits for this slot's job lease, a skip the
// window costs (both may skip).
func allowRuns(a *attempt) verdict {
	ap := a.ap
	if a.jobLease == nil || !inRollingWindow(a, allowRunsWindow) {
		return goOn
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	claims, err := ap.cfg.Locker.ReadClaims(ctx, a.name)
	cancel()
	if err != nil {
		return rollingLost(a, err)
	}
	for u := range history.ClaimedSlots(claims) {
		if u == a.t.Unix() {
			continue
		}
		note := "a run started under overlap allow is still going on (slot " + slotString(time.Unix(u, 0)) + ")"
		return rollingOverlap(a, nil, note)
	}
	return goOn
}

// leaseRuns skips a slot under allow that holds no job lease for
// overlap while a run holds the job lease: a run under forbid or replace
// on a replica of the other policy (or under allow, within its window, on
// one that knows of such a replica), which waits for runs under allow but
// which this run, holding no job lease, would not wait for.
func leaseRuns(a *attempt) verdict {
	ap := a.ap
	if a.j.spec.Overlap != OverlapAllow || a.jobLease != nil {
		return goOn
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	he, err := ap.cfg.Locker.ReadLease(ctx, history.RunKey(a.name))
	cancel()
	if err != nil {
		return rollingLost(a, err)
	}
	if he == nil || he.Done {
		return goOn
	}
	return rollingOverlap(a, heldAttrs(he), "a run under overlap forbid or replace holds the job lease")
}

// rollingWindow names one of a job's two windows of a rolling change of
// its overlap policy, one a side.
type rollingWindow int

const (
	// allowRunsWindow: the slots that take the job lease read the open
	// claims (allowRuns) until j.allowRunsUntil.
	allowRunsWindow rollingWindow = iota
	// leaseRunsWindow: the slots under allow take the job lease
	// (takeJobLease) until j.leaseRunsUntil.
	leaseRunsWindow
)

// inRollingWindow reports whether a's slot is within w, its job's window
// (read under the job's lock), or acts as within it: while this replica's
// first read of the fleet's definitions has not answered, both sides'
// rule, since its first slots may fire before that read.
func inRollingWindow(a *attempt, w rollingWindow) bool {
	if a.ap.defsUnread.Load() {
		return true
	}
	now, j := a.ap.clock.Now(), a.j
	j.mu.Lock()
	defer j.mu.Unlock()
	if w == leaseRunsWindow {
		return now.Before(j.leaseRunsUntil)
	}
	return now.Before(j.allowRunsUntil)
}

// rollingOverlap is the verdict on a slot skipped for a run of the other
// policy (note says which): handled, skipped for overlap; a backfill
// leaves it unhandled, for a later backfill.
func rollingOverlap(a *attempt, attrs []any, note string) verdict {
	attrs = append(attrs, "note", note+" (a rolling change of the job's overlap policy)")
	if a.origin == originBackfill {
		return verdict{act: actRelease, reason: history.ReasonOverlap, attrs: attrs,
			err: fmt.Errorf("scheduler: backfill %s %s: %s", a.name, a.slot, note)}
	}
	return verdict{act: actDone, reason: history.ReasonOverlap, attrs: attrs, entry: a.skippedEntry(history.ReasonOverlap)}
}

// rollingLost is the verdict on a slot whose look for the other policy's
// runs failed: not run here, as a slot lost for want of a majority.
func rollingLost(a *attempt, err error) verdict {
	v := a.lost(err)
	if a.origin == originBackfill {
		v.err = fmt.Errorf("scheduler: backfill %s %s: %w", a.name, a.slot, err)
	}
	return v
}
