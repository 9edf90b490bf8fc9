package scheduler

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// backfillEnv is a scheduler (not running) on an in-process locker with
// one every-second job, a minute into the bubble.
func backfillEnv(t *testing.T, overlap Overlap, keep int) (*env, *Scheduler, *recorder) {
	e := newEnv(t)
	rec := &recorder{now: time.Now}
	spec := everySecond(t, "bf", rec)
	spec.Overlap = overlap
	s, err := New(Config{Replica: "bf", Locker: e.locker, Logger: e.sink.logger("bf"), HistoryKeep: keep,
		MaxClockSkew: time.Second, ReconcileAfter: time.Second, Jobs: []JobSpec{spec}})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Minute)
	return e, s, rec
}

// TestPlanBackfillRefuses: a window that ends before it starts, that
// reaches slots still belonging to the replicas, or that holds more than
// MaxBackfillSlots slots is refused (ErrBackfillWindow); without a slot
// history nothing can be planned (ErrNoHistory).
func TestPlanBackfillRefuses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, s, _ := backfillEnv(t, OverlapForbid, 0)
		ctx, now := context.Background(), time.Now()
		after := s.BackfillAfter("bf")
		if after <= 0 || after > 10*time.Second {
			t.Fatalf("BackfillAfter %v", after)
		}
		for name, w := range map[string][2]time.Time{
			"reversed":   {now.Add(-10 * time.Second), now.Add(-20 * time.Second)},
			"too recent": {now.Add(-30 * time.Second), now.Add(-after + time.Second)},
			"future":     {now.Add(-30 * time.Second), now.Add(time.Hour)},
			"too large":  {now.Add(-3 * time.Hour), now.Add(-time.Minute)},
		} {
			if _, err := s.PlanBackfill(ctx, "bf", w[0], w[1]); !errors.Is(err, ErrBackfillWindow) {
				t.Errorf("%s: %v, want ErrBackfillWindow", name, err)
			}
		}
		if _, err := s.PlanBackfill(ctx, "nope", now.Add(-time.Minute), now.Add(-time.Minute)); !errors.Is(err, ErrUnknownJob) {
			t.Errorf("unknown job: %v", err)
		}
		_, off, _ := backfillEnv(t, OverlapForbid, -1)
		if _, err := off.PlanBackfill(ctx, "bf", now.Add(-time.Minute), now.Add(-30*time.Second)); !errors.Is(err, ErrNoHistory) {
			t.Errorf("history off: %v, want ErrNoHistory", err)
		}
		if _, err := off.RunSlot(ctx, "bf", now.Add(-30*time.Second).Truncate(time.Second)); !errors.Is(err, ErrNoHistory) {
			t.Errorf("RunSlot with history off: %v, want ErrNoHistory", err)
		}
	})
}

// TestRunSlotForbidWaitsForJobLease: under overlap forbid a backfilled
// slot needs the job lease; while another run holds it past half a lock
// ttl, RunSlot fails (locking.ErrNotAcquired, slot.skipped reason
// overlap) and hands the slot's claim back unmarked, so that a later
// backfill runs it — once.
func TestRunSlotForbidWaitsForJobLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, s, rec := backfillEnv(t, OverlapForbid, 0)
		ctx := context.Background()
		sl := time.Now().Add(-30 * time.Second).Truncate(time.Second)
		held, err := e.locker.Acquire(ctx, history.RunKey("bf"), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.RunSlot(ctx, "bf", sl); !errors.Is(err, locking.ErrNotAcquired) || errors.Is(err, ErrSlotHandled) {
			t.Fatalf("RunSlot while the job lease is held: %v", err)
		}
		if len(rec.all()) != 0 {
			t.Fatal("ran while another run held the job lease")
		}
		if sk := where(e.sink.events(t), "slot.skipped", "reason", "overlap", "slot", slotString(sl)); len(sk) != 1 {
			t.Errorf("overlap lines: %v", sk)
		}
		if err := held.End(ctx, locking.Ending{}).Err; err != nil {
			t.Fatal(err)
		}
		h, err := s.RunSlot(ctx, "bf", sl)
		if err != nil || h.Outcome != history.OutcomeSucceeded || h.Token == 0 {
			t.Fatalf("RunSlot once the lease is free: %+v %v", h, err)
		}
		runs := rec.all()
		if len(runs) != 1 || !runs[0].Run.Slot.Equal(sl) || runs[0].Run.Manual {
			t.Fatalf("runs %+v: want one normal run of slot %s", runs, slotString(sl))
		}
		if _, err := s.RunSlot(ctx, "bf", sl); !errors.Is(err, ErrSlotHandled) {
			t.Errorf("RunSlot of the slot it just ran: %v", err)
		}
		time.Sleep(2 * time.Minute) // the done marker is gone: the history answers
		var he *HandledError
		if _, err := s.RunSlot(ctx, "bf", sl); !errors.As(err, &he) || he.Reason != string(history.OutcomeSucceeded) {
			t.Errorf("RunSlot after the marker expired: %v", err)
		}
		if len(rec.all()) != 1 {
			t.Errorf("%d runs, want 1", len(rec.all()))
		}
	})
}

// TestPlanBackfillBeyondHistory: when the history holds history.keep
// entries from the window on, slots older than its oldest entry cannot be
// told apart from slots that ran: they are skipped ("beyond history").
func TestPlanBackfillBeyondHistory(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, s, _ := backfillEnv(t, OverlapAllow, 5)
		ctx := context.Background()
		base := time.Now().Add(-50 * time.Second).Truncate(time.Second)
		for i := 10; i < 20; i++ {
			at := base.Add(time.Duration(i) * time.Second)
			if err := e.locker.AppendLog(ctx, "bf", locking.LogAppend{
				Entry: history.Entry{Slot: slotString(at), Outcome: history.OutcomeSucceeded}.LogEntry(at), Keep: 5}); err != nil {
				t.Fatal(err)
			}
		}
		plan, err := s.PlanBackfill(ctx, "bf", base, base.Add(25*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range plan {
			i := int(b.Slot.Sub(base) / time.Second)
			want, why := false, "beyond history"
			switch {
			case i > 19:
				want, why = true, "no outcome"
			case i >= 15:
				why = "succeeded"
			}
			if b.Run != want || b.Why != why {
				t.Errorf("slot +%d: run=%v %q, want run=%v %q", i, b.Run, b.Why, want, why)
			}
		}
	})
}

// TestBackfillRefusesASlotThatMayHaveRun: a slot whose history holds a
// settler's "missed, may have started" beside a reconciler's plain missed
// or a start-up probe's skipped late — whatever order the stores return
// them in — is refused by the plan and by RunSlot, which name that entry.
// (A killed backfill's slot was backfilled again: the first of equal
// precedence decided, and the stores sort the reconciler's shorter entry
// first.)
func TestBackfillRefusesASlotThatMayHaveRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, s, rec := backfillEnv(t, OverlapForbid, 50)
		ctx := context.Background()
		base := time.Now().Add(-40 * time.Second).Truncate(time.Second)
		settled := func(at time.Time) history.Entry {
			return history.Entry{Slot: slotString(at), Outcome: history.OutcomeMissed, Reason: history.ReasonUnknown,
				Replica: "bf-killed", RunID: "run-1", MayHaveStarted: true, SettledBy: "r2", SettleID: "c-9"}
		}
		cases := [][]history.Entry{
			{missedEntry(base, history.ReasonUnknown), settled(base)},
			{settled(base.Add(time.Second)), missedEntry(base.Add(time.Second), history.ReasonUnknown)},
			{{Slot: slotString(base.Add(2 * time.Second)), Outcome: history.OutcomeSkipped, Reason: history.ReasonLate, Replica: "r1"},
				settled(base.Add(2 * time.Second))},
			{missedEntry(base.Add(3*time.Second), history.ReasonNoReplica),
				{Slot: slotString(base.Add(3 * time.Second)), Outcome: history.OutcomeSkipped, Reason: history.ReasonPaused}},
		}
		for _, entries := range cases {
			for _, h := range entries {
				at, _ := time.Parse(time.RFC3339, h.Slot)
				if err := e.locker.AppendLog(ctx, "bf", locking.LogAppend{Entry: h.LogEntry(at), Keep: 50}); err != nil {
					t.Fatal(err)
				}
			}
		}
		plan, err := s.PlanBackfill(ctx, "bf", base, base.Add(3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for i, b := range plan {
			want := "missed (unknown, may have started)"
			if i == 3 {
				want = "skipped (paused)"
			}
			if b.Run || b.Why != want || b.Entry == nil {
				t.Errorf("slot +%d: run=%v %q, want refused: %q", i, b.Run, b.Why, want)
				continue
			}
			if i < 3 && (b.Entry.Evidence() != history.MayHaveRun || b.Entry.Source() != "run run-1, replica bf-killed, settled by r2") {
				t.Errorf("slot +%d: decided by %+v (%s)", i, *b.Entry, b.Entry.Source())
			}
		}
		for i := range 4 {
			var he *HandledError
			if _, err := s.RunSlot(ctx, "bf", base.Add(time.Duration(i)*time.Second)); !errors.As(err, &he) || he.Entry == nil {
				t.Errorf("RunSlot +%d: %v, want refused by its entry", i, err)
			}
		}
		if n := len(rec.all()); n != 0 {
			t.Errorf("%d runs of slots that may have run or were paused", n)
		}
	})
}

// TestBackfillOfAReplaceJob: a backfilled slot of an overlap replace job
// runs under the job lease (never beside a run going on) and is not
// canceled as replaced by the record that every scheduled slot raises —
// it names a slot later than any backfilled one, and canceled the run at
// its first poll, so the slot was lost and never backfilled again. A slot
// due after the backfill started still replaces it.
func TestBackfillOfAReplaceJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, s, rec := backfillEnv(t, OverlapReplace, 50)
		rec.d = 3 * time.Second
		ctx := context.Background()
		now := time.Now().Truncate(time.Second)
		if err := e.locker.AdvanceRecord(ctx, history.ReplaceKey("bf"), now.Add(-2*time.Second).Unix()); err != nil {
			t.Fatal(err)
		}
		slot := now.Add(-30 * time.Second)
		held, err := e.locker.Acquire(ctx, history.RunKey("bf"), 2*time.Second) // a run going on
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		var h history.Entry
		go func() {
			defer close(done)
			h, err = s.RunSlot(ctx, "bf", slot)
		}()
		time.Sleep(time.Second)
		if n := len(rec.all()); n != 0 {
			t.Fatalf("the backfill ran beside a run holding the job lease (%d runs)", n)
		}
		if err := held.End(ctx, locking.Ending{}).Err; err != nil {
			t.Fatal(err)
		}
		<-done
		if err != nil || h.Outcome != history.OutcomeSucceeded {
			t.Fatalf("backfill of a replace job: %+v %v, want succeeded", h, err)
		}
	})
}

// TestBackfillOfAReplaceJobYieldsToAWaitingSlot: a backfilled run of an
// overlap replace job holds the job lease as a scheduled run does, and
// yields it as one does: a slot due after the backfill started, waiting
// for the lease (it raised the replace record), cancels the run as
// replaced, naming that slot. A record of a slot due before the backfill
// started (by more than the clock skew) does not.
func TestBackfillOfAReplaceJobYieldsToAWaitingSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, s, rec := backfillEnv(t, OverlapReplace, 50)
		rec.d = time.Minute
		ctx := context.Background()
		now := time.Now().Truncate(time.Second)
		slot := now.Add(-30 * time.Second)
		before := now.Add(-5 * time.Second)
		if err := e.locker.AdvanceRecord(ctx, history.ReplaceKey("bf"), before.Unix()); err != nil {
			t.Fatal(err)
		}
		markDone(t, e, "bf", before) // it ran: no slot waits for the lease
		done := make(chan struct{})
		var h history.Entry
		var err error
		go func() {
			defer close(done)
			h, err = s.RunSlot(ctx, "bf", slot)
		}()
		time.Sleep(10 * time.Second)
		if n := len(rec.all()); n != 0 {
			t.Fatalf("the run ended early (%d runs): replaced by a slot due before it started", n)
		}
		if _, jerr := e.locker.Acquire(ctx, history.RunKey("bf"), time.Second); !errors.Is(jerr, locking.ErrNotAcquired) {
			t.Fatalf("the backfilled run does not hold the job lease: %v", jerr)
		}
		waiting := time.Now().Truncate(time.Second)
		if err := e.locker.AdvanceRecord(ctx, history.ReplaceKey("bf"), waiting.Unix()); err != nil {
			t.Fatal(err)
		}
		<-done
		if h.Outcome != history.OutcomeCanceled || h.Reason != history.ReasonReplaced || h.BySlot != slotString(waiting) {
			t.Fatalf("backfill beside a waiting slot: %+v (%v), want canceled, replaced by %s", h, err, slotString(waiting))
		}
		if runs := rec.all(); len(runs) != 1 || !errors.Is(runs[0].Cause, ErrReplaced) {
			t.Fatalf("runs %+v, want one canceled as replaced", runs)
		}
	})
}

// markDone leaves slot t of job its done marker, as a run of it does.
func markDone(t *testing.T, e *env, job string, slot time.Time) {
	t.Helper()
	ctx := context.Background()
	l, err := e.locker.Claim(ctx, history.SlotKey(job, slot), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.End(ctx, locking.Ending{DoneTTL: time.Hour, Note: "succeeded"}).Err; err != nil {
		t.Fatal(err)
	}
}

// TestBackfillOfAReplaceJobLetsAWaitingSlotGoFirst: a backfilled slot of a
// replace job does not take the job lease while a newer scheduled slot
// that asked for it (the replace record names it) may still be waiting
// for it and no store shows it handled: a backfilled run is replaced only
// by a slot due after it started, so one that took the lease the moment
// the run before it let go kept the waiting slot out until its wait ran
// out (simulation seed 132853 × 72 h: skipped overlap). Once the waiting
// slot is handled, the backfill goes on.
func TestBackfillOfAReplaceJobLetsAWaitingSlotGoFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, s, rec := backfillEnv(t, OverlapReplace, 50)
		ctx := context.Background()
		now := time.Now().Truncate(time.Second)
		slot, waiting := now.Add(-30*time.Second), now.Add(-time.Second)
		if err := e.locker.AdvanceRecord(ctx, history.ReplaceKey("bf"), waiting.Unix()); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		var h history.Entry
		var err error
		go func() {
			defer close(done)
			h, err = s.RunSlot(ctx, "bf", slot)
		}()
		time.Sleep(5 * time.Second)
		if n := len(rec.all()); n != 0 {
			t.Fatalf("%d runs while a newer slot waits for the job lease", n)
		}
		jl, jerr := e.locker.Acquire(ctx, history.RunKey("bf"), time.Second)
		if jerr != nil {
			t.Fatalf("the waiting slot cannot take the job lease: %v", jerr)
		}
		jl.End(ctx, locking.Ending{})
		markDone(t, e, "bf", waiting)
		<-done
		if err != nil || h.Outcome != history.OutcomeSucceeded {
			t.Fatalf("backfill after the waiting slot ran: %+v (%v), want succeeded", h, err)
		}
		if n := len(rec.all()); n != 1 {
			t.Fatalf("%d runs, want 1", n)
		}
	})
}
