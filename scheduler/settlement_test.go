package scheduler

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// TestSettleAbandonedReadsTheHistory: a started claim whose holder died is
// settled and reported once — run.abandoned and an abandoned entry —
// unless the slot history already records that run's own end: then the
// claim is closed with that entry and reported no second time. A
// settler's verdict beside the claim on every store (here the one store:
// Abandoned.Majority) was written by an end that reached no majority and
// never reported: the slot is reported now. A settler's verdict beside a
// claim left on a minority is that settler's report
// (TestSettledClaimLeftOnAMinorityIsNotReportedAgain).
func TestSettleAbandonedReadsTheHistory(t *testing.T) {
	for _, c := range []struct {
		name     string
		recorded *history.Entry // the slot's entry before the settlement, run id filled in
		reported int
		want     history.Evidence
	}{
		{"nothing recorded", nil, 1, history.RanUnfinished},
		{"its own end recorded", &history.Entry{Outcome: history.OutcomeSucceeded, Replica: "dead"}, 0, history.Ran},
		{"a settler's verdict beside the claim on a majority", &history.Entry{Outcome: history.OutcomeAbandoned, Replica: "dead", SettledBy: "r9"}, 1, history.RanUnfinished},
		{"a reconciler's missed", &history.Entry{Outcome: history.OutcomeMissed, Reason: history.ReasonUnknown}, 1, history.RanUnfinished},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e, s, _ := backfillEnv(t, OverlapAllow, 50)
				ctx := context.Background()
				j, _ := s.job("bf")
				told := &writtenLog{}
				s.cfg.Notifier, j.spec.Notify = replicaNotifier{told, "settler"}, notifyAll
				slot := time.Now().Add(-20 * time.Second).Truncate(time.Second)
				key := history.SlotKey("bf", slot)
				lease, err := e.locker.Claim(ctx, key, 2*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				lease.Start()
				if err := lease.Extend(ctx); err != nil { // confirmed started
					t.Fatal(err)
				}
				runID := lease.Grant().ID // its holder dies: never ended
				if c.recorded != nil {
					h := *c.recorded
					h.Slot, h.RunID = slotString(slot), runID
					if err := e.locker.AppendLog(ctx, "bf", locking.LogAppend{Entry: h.LogEntry(slot), Keep: 50}); err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(5 * time.Second) // its lease expires
				s.settlement.settleOrphan(j, &locking.Abandoned{Key: key})
				synctest.Wait()

				if n := len(where(e.sink.events(t), evRunAbandoned, "slot", slotString(slot))); n != c.reported {
					t.Errorf("%d run.abandoned lines, want %d", n, c.reported)
				}
				// The notifier is told what is reported, by the settler
				// whose end wrote it; a recorded run is not told again.
				if got := told.all(); len(got) != c.reported ||
					c.reported == 1 && (got[0].w.Entry.Outcome != history.OutcomeAbandoned || got[0].w.Entry.RunID != runID) {
					t.Errorf("notifier told %+v, want the abandoned run %d time(s)", got, c.reported)
				}
				got, found, err := s.outcomes.slotRecorded(ctx, "bf", slot)
				if err != nil || !found || got.Evidence() != c.want || got.RunID != runID {
					t.Errorf("recorded %+v %v %v, want the run's outcome (%v)", got, found, err, c.want)
				}
				if _, err := e.locker.Claim(ctx, key, time.Second); err == nil {
					t.Error("the slot's key is free: no done marker closed the claim")
				}
			})
		})
	}
}

// fakeClaims takes claims on a locker as the attempt's acquire would,
// without its retries; block, when set, holds each call until closed.
type fakeClaims struct {
	locker locking.Locker
	calls  atomic.Int32
	block  chan struct{}
}

func (f *fakeClaims) acquire(job string, key locking.Key, p retryPolicy) (*locking.Lease, error) {
	f.calls.Add(1)
	if f.block != nil {
		<-f.block
	}
	return f.locker.Claim(context.Background(), key, 10*time.Second)
}

// permit takes a permit of s on the locker, once.
func (f *fakeClaims) permit(job string, s locking.Semaphore, from int, p retryPolicy) (*locking.Lease, error) {
	return s.Acquire(context.Background(), f.locker, 10*time.Second, from)
}

// fakeEnds records the ends it is given and ends each lease at once,
// without its entry or record.
type fakeEnds struct {
	mu      sync.Mutex
	ends    []pendingEnd
	handled []time.Time
}

func (f *fakeEnds) endLease(job, slot string, l *locking.Lease, doneTTL time.Duration, note string) {
	f.endLeaseThen(pendingEnd{job: job, slot: slot, lease: l, doneTTL: doneTTL, note: note})
}

func (f *fakeEnds) endLeaseThen(p pendingEnd) {
	f.mu.Lock()
	f.ends = append(f.ends, p)
	f.mu.Unlock()
	if p.lease != nil {
		_ = p.lease.End(context.Background(), locking.Ending{DoneTTL: p.doneTTL, Note: p.note}).Err
	}
	if p.then != nil {
		p.then()
	}
}

func (f *fakeEnds) recordHandled(j *job, t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handled = append(f.handled, t)
}

// fakeOutcomes answers every read with entry (found when set).
type fakeOutcomes struct{ entry *history.Entry }

func (f fakeOutcomes) slotRecorded(ctx context.Context, job string, t time.Time) (history.Entry, bool, error) {
	if f.entry == nil {
		return history.Entry{}, false, nil
	}
	return *f.entry, true, nil
}

// TestSettlementAlone: settlement built over fakes of the claim, the end
// and the history. A claim confirmed started is ended with an abandoned
// entry and reported once (run.abandoned); one never confirmed with a
// missed entry that says it may have started (slot.missed); one whose run
// the history already records with that entry and no report. A second
// settlement of a key being settled does nothing.
func TestSettlementAlone(t *testing.T) {
	for _, c := range []struct {
		name     string
		started  bool
		recorded *history.Entry
		outcome  history.Outcome
		event    string
	}{
		{"started", true, nil, history.OutcomeAbandoned, evRunAbandoned},
		{"unconfirmed", false, nil, history.OutcomeMissed, evSlotMissed},
		{"recorded", true, &history.Entry{Outcome: history.OutcomeSucceeded}, history.OutcomeSucceeded, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				env := newEnv(t)
				ctx := context.Background()
				e := testEngine(t, Config{Replica: "r1", Locker: env.locker, Logger: env.sink.logger("r1"),
					Metrics: env.metrics, Jobs: []JobSpec{everySecond(t, "tick", &recorder{now: time.Now})}})
				slot := bubbleStart.Add(-time.Minute)
				key := history.SlotKey("tick", slot)
				dead, err := env.locker.Claim(ctx, key, 2*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				if c.started {
					dead.Start()
					if err := dead.Extend(ctx); err != nil {
						t.Fatal(err)
					}
				}
				if c.recorded != nil {
					c.recorded.RunID = dead.Grant().ID
				}
				time.Sleep(5 * time.Second) // its holder died: the lease expires
				claims, ends := &fakeClaims{locker: env.locker, block: make(chan struct{})}, &fakeEnds{}
				st := newSettlement(e, claims, ends, fakeOutcomes{c.recorded})
				j, _ := e.job("tick")
				done := make(chan struct{})
				go func() { st.settleOrphan(j, &locking.Abandoned{Key: key}); close(done) }()
				synctest.Wait()
				st.settleOrphan(j, &locking.Abandoned{Key: key}) // busy: returns at once
				close(claims.block)
				<-done

				if n := claims.calls.Load(); n != 1 {
					t.Errorf("%d claims taken, want 1", n)
				}
				if len(ends.ends) != 1 || ends.ends[0].entry == nil {
					t.Fatalf("ends %+v, want one with an entry", ends.ends)
				}
				got, ok := history.ParseEntry(*ends.ends[0].entry)
				if !ok || got.Outcome != c.outcome || got.MayHaveStarted != (c.outcome == history.OutcomeMissed) {
					t.Errorf("entry %+v, want outcome %s", got, c.outcome)
				}
				if len(ends.handled) != 1 || !ends.handled[0].Equal(slot) {
					t.Errorf("records moved to %v, want the slot", ends.handled)
				}
				if c.event != "" {
					if n := len(where(env.sink.events(t), c.event, "slot", slotString(slot))); n != 1 {
						t.Errorf("%d %s lines, want 1", n, c.event)
					}
				}
				if n := len(where(env.sink.events(t), evRunAbandoned)); c.event == "" && n != 0 {
					t.Errorf("%d run.abandoned lines for a run the history records", n)
				}
			})
		})
	}
}

// before closing it. The next settler finds the dead settler's claim —
// never confirmed, for a settler runs no body — on a slot whose history
// records the run's own end. It closes the claim with that entry: no
// slot.missed may_have_started about a slot that ran and ended (found by
// the small-world checker, world cast2).
func TestSettlerOfAnEndedRunIsNotReportedMissed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, s, _ := backfillEnv(t, OverlapAllow, 50)
		ctx := context.Background()
		j, _ := s.job("bf")
		slot := time.Now().Add(-20 * time.Second).Truncate(time.Second)
		key := history.SlotKey("bf", slot)
		ran := history.Entry{Slot: slotString(slot), Outcome: history.OutcomeSucceeded, Replica: "r1", RunID: "0123456789abcdef"}
		if err := e.locker.AppendLog(ctx, "bf", locking.LogAppend{Entry: ran.LogEntry(slot), Keep: 50}); err != nil {
			t.Fatal(err)
		}
		// The dead settler's claim: won, never confirmed, never ended.
		if _, err := e.locker.Claim(ctx, key, 2*time.Second); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second) // its lease expires
		s.settlement.settleOrphan(j, &locking.Abandoned{Key: key})
		synctest.Wait()

		if n := len(where(e.sink.events(t), evSlotMissed, "slot", slotString(slot))); n != 0 {
			t.Errorf("%d slot.missed lines for a slot whose run ended, want 0", n)
		}
		got, found, err := s.outcomes.slotRecorded(ctx, "bf", slot)
		if err != nil || !found || got != ran {
			t.Errorf("recorded %+v %v %v, want the run's own end %+v", got, found, err, ran)
		}
		if _, err := e.locker.Claim(ctx, key, time.Second); err == nil {
			t.Error("the slot's key is free: no done marker closed the claim")
		}
	})
}
