package scheduler

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// frozenWriter wraps a Locker: the first AppendLog of a missed slot's
// entry blocks until thaw, as in a replica frozen (SIGSTOP, a VM paused)
// between deciding a verdict and writing it. The write then goes out as
// it was made: the frozen process never saw its deadline pass.
type frozenWriter struct {
	locking.Locker
	once   sync.Once
	frozen chan struct{} // closed when the write is held
	thawed chan struct{} // closed by thaw
}

func newFrozenWriter(l locking.Locker) *frozenWriter {
	return &frozenWriter{Locker: l, frozen: make(chan struct{}), thawed: make(chan struct{})}
}

func (f *frozenWriter) AppendLog(ctx context.Context, family string, a locking.LogAppend) error {
	if strings.Contains(a.Entry.Value, `"outcome":"`+string(history.OutcomeMissed)+`"`) {
		f.once.Do(func() {
			close(f.frozen)
			<-f.thawed
			ctx = context.WithoutCancel(ctx)
		})
	}
	return f.Locker.AppendLog(ctx, family, a)
}

func (f *frozenWriter) thaw() { close(f.thawed) }

// reconciling is a replica for the reconciler tests: over l (nil: the
// env's locker), with passes and heartbeats every d, judging slots a few
// seconds old.
func (e *env) reconciling(replica string, l locking.Locker, d time.Duration, specs ...JobSpec) *Scheduler {
	e.t.Helper()
	if l == nil {
		l = e.locker
	}
	s, err := New(Config{Replica: replica, Locker: l, Logger: e.sink.logger(replica), Metrics: e.metrics,
		LockTTL: 30 * time.Second, MaxClockSkew: 2 * time.Second, ShutdownGrace: 5 * time.Second,
		Beat: d, ReconcileEvery: d, ReconcileAfter: time.Second, DefinitionsHash: "defs", Jobs: specs})
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// TestReconcilerFrozenPastItsLeaseReportsOnce: a reconciler decides that a
// slot was missed and freezes before writing the verdict; its lease runs
// out, a second replica's reconciler judges the slot, writes and reports
// it; the first one wakes and its write goes out. The slot is reported
// missed once, and has one history entry.
func TestReconcilerFrozenPastItsLeaseReportsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		ctx := context.Background()
		slot := bubbleStart.Add(10 * time.Second)
		// The slot's done marker without an entry (a replica that closed it
		// and died before anything else): nobody runs it, nobody records it.
		ghost, err := e.locker.Claim(ctx, history.SlotKey("yearly", slot), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := ghost.End(ctx, locking.Ending{DoneTTL: time.Hour, Note: "ghost"}).Err; err != nil {
			t.Fatal(err)
		}
		spec := cronSpec(t, "yearly", "10 0 0 1 1 *", &recorder{now: time.Now})
		frozen := newFrozenWriter(e.locker)
		stop1 := running(t, e.reconciling("r1", frozen, time.Second, spec))
		<-frozen.frozen // r1 decided "missed" and froze before writing it
		stop2 := running(t, e.reconciling("r2", nil, time.Second, spec))
		time.Sleep(5 * time.Second) // r1's lease (1s) ran out; r2 judged the slot
		frozen.thaw()
		time.Sleep(3 * time.Second)
		stop1()
		stop2()

		evs := e.sink.events(t)
		missed := where(evs, "slot.missed", "slot", slotString(slot))
		if len(missed) != 1 {
			e.sink.dump(t)
			t.Fatalf("slot reported missed %d times, want once: %v", len(missed), missed)
		}
		if by := missed[0].str("replica"); by != "r2" {
			t.Errorf("reported by %s, want r2 (r1 froze before writing)", by)
		}
		if n := e.metrics.get("yearly/missed/"+string(history.ReasonUnknown), true); n != 1 {
			t.Errorf("slotlock_slots_missed_total counted %d, want 1", n)
		}
		hist, err := history.ReadEntries(ctx, e.locker, "yearly", bubbleStart, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(hist) != 1 || hist[0].Outcome != history.OutcomeMissed {
			t.Errorf("history %+v, want one missed entry", hist)
		}
	})
}

// claimYearly starts replica r1, reconciling every d, with a job whose one
// slot this year is at 10 s; just before it, another replica claims that
// slot with a lease of ttl (and r1 finds it held). It returns the slot, the
// replica's stop and the claim.
func (e *env) claimYearly(d, ttl time.Duration) (time.Time, func(), *locking.Lease) {
	e.t.Helper()
	slot := bubbleStart.Add(10 * time.Second)
	spec := cronSpec(e.t, "yearly", "10 0 0 1 1 *", &recorder{now: time.Now})
	stop := running(e.t, e.reconciling("r1", nil, d, spec))
	time.Sleep(time.Until(slot.Add(-500 * time.Millisecond)))
	lease, err := e.locker.Claim(context.Background(), history.SlotKey("yearly", slot), ttl)
	if err != nil {
		e.t.Fatal(err)
	}
	return slot, stop, lease
}

// TestReconcilerSettlesTheClaimItWaitsFor: a slot's claim is abandoned by
// a replica that died at once (the live replica found the slot held), and
// the job fires no more for a year, so no later claim is ever pointed to
// it. The reconciler, which waits for an open claim to end, must not wait
// for ever: the claim is settled, the slot gets its one history entry and
// the reconciler judges past it.
func TestReconcilerSettlesTheClaimItWaitsFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		ctx := context.Background()
		slot, stop, _ := e.claimYearly(time.Second, 2*time.Second) // a replica that claims the slot and dies
		time.Sleep(time.Minute)
		stop()

		hist, err := history.ReadEntries(ctx, e.locker, "yearly", bubbleStart, 100)
		if err != nil {
			t.Fatal(err)
		}
		claims, err := e.locker.ReadClaims(ctx, "yearly")
		if err != nil {
			t.Fatal(err)
		}
		judged, err := e.locker.ReadRecord(ctx, history.ReconciledKey("yearly"))
		if err != nil {
			t.Fatal(err)
		}
		if len(hist) != 1 || len(claims) != 0 || judged < slot.Unix() {
			e.sink.dump(t)
			t.Fatalf("history %+v, open claims %v, judged up to %v: want one entry, no claim, judged past %v",
				hist, claims, time.Unix(judged, 0).UTC(), slot)
		}
	})
}

// TestReconcilerNeverDropsASlotSilently: a slot's run goes on for more
// than a day (its claim is live all along), so the reconciler cannot judge
// it until it is older than the fleet records it judges by. The slot then
// leaves the window judged — once, loudly (reconcile.unjudged names it) —
// and the reconciler's record moves past it.
func TestReconcilerNeverDropsASlotSilently(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		ctx := context.Background()
		slot, stop, run := e.claimYearly(time.Minute, 30*time.Second)
		run.Keep(ctx) // a run of another replica, going on for 26 hours
		time.Sleep(26 * time.Hour)
		stop()
		if err := run.End(ctx, locking.Ending{}).Err; err != nil {
			t.Fatal(err)
		}

		unjudged := where(e.sink.events(t), "reconcile.unjudged", "job", "yearly")
		if len(unjudged) != 1 || unjudged[0].str("first_slot") != slotString(slot) || unjudged[0].num("count") != 1 {
			t.Fatalf("reconcile.unjudged lines %v, want one naming %s", unjudged, slotString(slot))
		}
		judged, err := e.locker.ReadRecord(ctx, history.ReconciledKey("yearly"))
		if err != nil || judged < slot.Unix() {
			t.Fatalf("judged up to %v (%v), want past %v", time.Unix(judged, 0).UTC(), err, slot)
		}
	})
}

// TestReconcilerReportsSlotsBeyondTheHistory: a pass that judges slots
// older than the history can tell (history.keep entries are newer: their
// own may have been trimmed) neither reports them missed nor counts them
// judged in silence: one reconcile.unjudged line names them. (They were
// counted as judged without a look: an every-second job whose passes fell
// ~400 s behind lost slots with no line.)
func TestReconcilerReportsSlotsBeyondTheHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, s, _ := backfillEnv(t, OverlapAllow, 5)
		ctx := context.Background()
		j, _ := s.job("bf")
		base := time.Now().Add(-40 * time.Second).Truncate(time.Second)
		var slots []time.Time
		for i := range 20 {
			at := base.Add(time.Duration(i) * time.Second)
			slots = append(slots, at)
			if i >= 10 {
				if err := e.locker.AppendLog(ctx, "bf", locking.LogAppend{
					Entry: history.Entry{Slot: slotString(at), Outcome: history.OutcomeSucceeded}.LogEntry(at), Keep: 5}); err != nil {
					t.Fatal(err)
				}
			}
		}
		p := &pass{r: s.reconciler}
		judged, err := p.judge(ctx, j, slots)
		if err != nil || !judged.Equal(slots[19]) {
			t.Fatalf("judged up to %v (%v), want %v", judged, err, slots[19])
		}
		evs := e.sink.events(t)
		unjudged := where(evs, "reconcile.unjudged", "job", "bf")
		if len(unjudged) != 1 || unjudged[0].str("first_slot") != slotString(base) || unjudged[0].num("count") != 15 {
			t.Errorf("reconcile.unjudged lines %v, want one naming the 15 slots before the history's reach", unjudged)
		}
		if n := len(where(evs, evSlotMissed)); n != 0 {
			t.Errorf("%d slots reported missed beyond the history's reach", n)
		}
	})
}

// fakeSettler records the abandoned claims a component hands to
// settlement.
type fakeSettler struct {
	mu   sync.Mutex
	keys []locking.Key
}

func (f *fakeSettler) settleOrphan(j *job, o *locking.Abandoned) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keys = append(f.keys, o.Key)
}

// TestReconcilerAlone: a reconciler built over the shared services and a
// fake settlement. A pass reports the slots nobody ran (no heartbeat
// covers them: no_replica), hands the open claim it meets to settlement
// and judges no further: the job's record stops before that slot.
func TestReconcilerAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newEnv(t)
		ctx := context.Background()
		e := testEngine(t, Config{Replica: "r1", Locker: env.locker, Logger: env.sink.logger("r1"),
			Metrics: env.metrics, ReconcileEvery: time.Second, ReconcileAfter: time.Second,
			Jobs: []JobSpec{everySecond(t, "tick", &recorder{now: time.Now})}})
		settle := &fakeSettler{}
		r := newReconciler(e, settle)
		started := time.Now()
		open := started.Add(3 * time.Second)
		if _, err := env.locker.Claim(ctx, history.SlotKey("tick", open), time.Hour); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		r.pass(started)
		e.wg.Wait()

		missed := where(env.sink.events(t), evSlotMissed, "job", "tick", "reason", string(history.ReasonNoReplica))
		if len(missed) != 2 || missed[0].str("slot") != slotString(started.Add(time.Second)) {
			t.Errorf("slot.missed lines %v, want the two slots before the open claim", missed)
		}
		if len(settle.keys) != 1 || settle.keys[0] != history.SlotKey("tick", open) {
			t.Errorf("settlement given %v, want the open claim of %v", settle.keys, open)
		}
		judged, err := env.locker.ReadRecord(ctx, history.ReconciledKey("tick"))
		if err != nil || judged != open.Add(-time.Second).Unix() {
			t.Errorf("judged up to %v (%v), want the slot before the open claim", time.Unix(judged, 0).UTC(), err)
		}
	})
}
