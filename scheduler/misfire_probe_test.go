package scheduler

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// TestStartupProbeRespectsClaims: a replica starting after the fleet was
// down finds the latest missed slot (120 s) after the job's record (60 s)
// and, under misfire skip, probes it before logging it skipped late. But
// the slot was claimed at its time by a replica the others never saw:
//
//   - running: the run is still going on when the probe comes, and ends
//     after it. The probe must see the live claim and leave the slot to
//     it: no slot.skipped late, one history entry, the run's.
//   - abandoned: its replica died before the probe. The probe must see
//     the claim and close it as abandoned, with a history entry that the
//     reconciler finds; no claim may stay open.
//
// A probe that takes the slot without its claim (a plain lock of the slot
// key, which claims never write) logs the running slot skipped, and leaves
// the abandoned one open forever with no entry, blocking the reconciler.
func TestStartupProbeRespectsClaims(t *testing.T) {
	for _, running := range []bool{true, false} {
		t.Run(map[bool]string{true: "running", false: "abandoned"}[running], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { probeClaimedSlot(t, running) })
		})
	}
}

// afterOneRun is the probe tests' start: a job every minute under misfire
// skip, whose slot 60 s r0 ran before the whole fleet stopped (the job's
// record says 60).
func afterOneRun(t *testing.T) (*env, JobSpec) {
	e := newEnv(t)
	spec := cronSpec(t, "minutely", "0 * * * * *", &recorder{now: time.Now})
	spec.Misfire = Misfire{Policy: MisfireSkip}
	stop0 := running(t, e.scheduler("r0", nil, spec))
	time.Sleep(70 * time.Second)
	stop0()
	return e, spec
}

func probeClaimedSlot(t *testing.T, live bool) {
	e, spec := afterOneRun(t)
	ctx := context.Background()

	slot := bubbleStart.Add(120 * time.Second)
	time.Sleep(time.Until(slot.Add(-500 * time.Millisecond)))
	ttl := 2 * time.Second
	if live {
		ttl = 30 * time.Second
	}
	ghost, err := e.locker.Claim(ctx, history.SlotKey("minutely", slot), ttl)
	if err != nil {
		t.Fatal(err)
	}
	if live {
		ghost.Keep(ctx)
	}
	time.Sleep(time.Until(bubbleStart.Add(125 * time.Second)))
	stop1 := running(t, e.scheduler("r1", nil, spec))
	time.Sleep(time.Until(bubbleStart.Add(150 * time.Second))) // the probe came at about 131 s
	if live {
		entry := history.Entry{Slot: slotString(slot), Outcome: history.OutcomeSucceeded, Replica: "ghost", RunID: ghost.Grant().ID}
		le := entry.LogEntry(slot)
		if err := ghost.End(ctx, locking.Ending{DoneTTL: time.Hour, Note: string(history.OutcomeSucceeded), Entry: &le, Keep: 100}).Err; err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Until(bubbleStart.Add(175 * time.Second)))
	stop1()

	evs := e.sink.events(t)
	hist, err := history.ReadEntries(ctx, e.locker, "minutely", slot, 100)
	if err != nil {
		t.Fatal(err)
	}
	var entries []history.Entry
	for _, h := range hist {
		if h.Slot == slotString(slot) {
			entries = append(entries, h)
		}
	}
	claims, err := e.locker.ReadClaims(ctx, "minutely")
	if err != nil {
		t.Fatal(err)
	}
	late := where(evs, "slot.skipped", "slot", slotString(slot), "reason", string(history.ReasonLate))
	fail := func(format string, args ...any) {
		t.Helper()
		e.sink.dump(t)
		t.Fatalf(format, args...)
	}
	switch {
	case len(entries) != 1:
		fail("slot 120 s has %d history entries %+v, want 1", len(entries), entries)
	case len(claims) != 0:
		fail("claims still open: %v", claims)
	case live && (entries[0].Outcome != history.OutcomeSucceeded || len(late) != 0):
		fail("a running slot: entry %+v, %d slot.skipped late lines (%v), want the run's entry and none", entries[0], len(late), late)
	case !live && len(late) != 0 && fmt.Sprint(entries[0].Outcome, entries[0].Reason) != string(history.OutcomeSkipped)+string(history.ReasonLate):
		fail("logged skipped late, but the history says %+v", entries[0])
	}
}

// TestStartupProbeOfAPausedSlot: the whole fleet is down when a slot of
// a paused job falls due (the simulation, seed 309538: every replica
// crashed around it). A replica starting afterwards probes the missed
// slot while the pause still holds: the claim is refused by the pause
// that covers the slot, and the slot must be logged skipped paused, with
// its history entry — as the replicas that fired it would have — not
// dropped with a debug line, leaving a slot with no outcome at all (the
// reconciler never reports a paused slot missed).
func TestStartupProbeOfAPausedSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, spec := afterOneRun(t)
		ctx := context.Background()
		time.Sleep(time.Until(bubbleStart.Add(110 * time.Second)))
		if _, err := e.locker.SetPause(ctx, "minutely", locking.Pause{Paused: true, Until: bubbleStart.Add(300 * time.Second), By: "ops"}); err != nil {
			t.Fatal(err)
		}
		slot := bubbleStart.Add(120 * time.Second) // nobody is up
		time.Sleep(time.Until(bubbleStart.Add(125 * time.Second)))
		stop1 := running(t, e.scheduler("r1", nil, spec))
		time.Sleep(time.Until(bubbleStart.Add(150 * time.Second))) // the probe came at about 131 s
		stop1()

		evs := e.sink.events(t)
		skips := where(evs, "slot.skipped", "slot", slotString(slot), "reason", string(history.ReasonPaused))
		hist, err := history.ReadEntries(ctx, e.locker, "minutely", slot, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(skips) != 1 || len(hist) == 0 || hist[len(hist)-1].Slot != slotString(slot) || hist[len(hist)-1].Reason != history.ReasonPaused {
			e.sink.dump(t)
			t.Fatalf("slot 120 s: %d slot.skipped paused lines, history %+v; want one, and its paused entry", len(skips), hist)
		}
	})
}
