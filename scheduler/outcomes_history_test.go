package scheduler

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// TestJitterRaiseDoesNotRerun: a rolling change adds a 119 s jitter to a
// job that runs every two minutes. An old replica (no jitter, and of a
// version that does not learn the fleet's jitters: no heartbeat, its one
// read of the definitions at start made before the new replica published
// them) runs each slot T at T; its done marker lives DoneTTL (30 s). A
// new replica fires
// T at T + offset: where the offset is longer than the marker's life, the
// claim is free again, yet the slot must not run twice — the slot history
// says it ran (slot.skipped reason done, outcome succeeded). Once the old
// replica is gone, the new one runs every slot, also those whose offset
// is past the marker-safe margin (the history has no entry for them).
func TestJitterRaiseDoesNotRerun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{now: time.Now}
		const jitter = 119 * time.Second
		oldSpec := jitterSpec(t, "raise", "0 */2 * * * *", 0, rec)
		newSpec := jitterSpec(t, "raise", "0 */2 * * * *", jitter, rec)
		oldRep, err := New(Config{Replica: "old", Locker: e.locker, Logger: e.sink.logger("old"), Metrics: e.metrics,
			LockTTL: 30 * time.Second, MaxClockSkew: 2 * time.Second, ShutdownGrace: 5 * time.Second, Beat: -1,
			Jobs: []JobSpec{oldSpec}})
		if err != nil {
			t.Fatal(err)
		}
		newRep := e.scheduler("new", nil, newSpec)
		if oldRep.DoneTTL() != 30*time.Second {
			t.Fatalf("DoneTTL %v", oldRep.DoneTTL())
		}
		stopOld := running(t, oldRep)
		time.Sleep(time.Second)
		stopNew := running(t, newRep)
		time.Sleep(21 * time.Minute) // slots 2..20 min: both replicas
		stopOld()
		time.Sleep(11 * time.Minute) // slots 22..30 min: the new replica alone
		stopNew()

		count := map[time.Time]int{}
		by := map[time.Time]string{}
		for _, r := range rec.all() {
			count[r.Run.Slot]++
			by[r.Run.Slot] = r.Run.Replica
		}
		evs := e.sink.events(t)
		beyond := 0
		for m := 2; m <= 30; m += 2 {
			sl := bubbleStart.Add(time.Duration(m) * time.Minute)
			if count[sl] != 1 {
				e.sink.dump(t)
				t.Fatalf("slot %s ran %d times, want 1", slotString(sl), count[sl])
			}
			off := JitterOffset("raise", sl, jitter)
			switch {
			case m > 20 && by[sl] != "new":
				t.Errorf("slot %s (offset %v) ran on %q after the old replica left", slotString(sl), off, by[sl])
			case m <= 20 && by[sl] != "old":
				t.Errorf("slot %s ran on %q, want the old replica (it fires first)", slotString(sl), by[sl])
			case m <= 20 && off > oldRep.DoneTTL()+time.Second:
				// The new replica's claim came after the old marker expired.
				beyond++
				sk := where(evs, "slot.skipped", "replica", "new", "slot", slotString(sl), "reason", "done")
				if len(sk) != 1 || sk[0].str("outcome") != "succeeded" {
					t.Errorf("slot %s (offset %v): the new replica's skip %v, want done from the history", slotString(sl), off, sk)
				}
			}
		}
		if beyond < 2 {
			t.Fatalf("only %d slots with an offset past the marker's life: the test proves little", beyond)
		}
	})
}

// TestSlotRecordedReadsBackFar: the history check finds a slot's entry
// behind many newer ones (it reads more while every entry read is newer),
// says no entry when it read all from the slot on, and cannot tell
// (errHistoryShort) when the log is full from the slot on.
func TestSlotRecordedReadsBackFar(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		s, err := New(Config{Replica: "r", Locker: e.locker, Logger: e.sink.logger("r"), HistoryKeep: 100,
			Jobs: []JobSpec{everySecond(t, "j", &recorder{now: time.Now})}})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		add := func(sec int, outcome history.Outcome) {
			at := bubbleAt(sec)
			err := e.locker.AppendLog(ctx, "j", locking.LogAppend{
				Entry: history.Entry{Slot: slotString(at), Outcome: outcome}.LogEntry(at), Keep: 100})
			if err != nil {
				t.Fatal(err)
			}
		}
		add(10, history.OutcomeMissed)
		add(10, history.OutcomeSucceeded)
		for sec := 12; sec < 12+60; sec++ {
			add(sec, history.OutcomeSucceeded)
		}
		if got, found, err := s.outcomes.slotRecorded(ctx, "j", bubbleAt(10)); err != nil || !found || got.Outcome != history.OutcomeSucceeded {
			t.Errorf("slot 10: %+v %v %v, want succeeded (over missed)", got, found, err)
		}
		if _, found, err := s.outcomes.slotRecorded(ctx, "j", bubbleAt(11)); err != nil || found {
			t.Errorf("slot 11: found %v, err %v; want no entry", found, err)
		}
		for sec := 72; sec < 72+40; sec++ {
			add(sec, history.OutcomeSucceeded) // 100 entries from slot 11 on: the log is full
		}
		if _, _, err := s.outcomes.slotRecorded(ctx, "j", bubbleAt(11)); err != errHistoryShort {
			t.Errorf("slot 11 behind a full log: err %v, want errHistoryShort", err)
		}
	})
}
