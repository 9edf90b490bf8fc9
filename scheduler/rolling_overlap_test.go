package scheduler

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// TestRollingChangeFromAllowAllowSideWaits: a rolling change of a job's
// overlap between allow and forbid, with a replica on each side running
// at once, in both orders of start (the new policy's replica starts
// while the old one runs). The body (8 s) is longer than the period
// (5 s): a run of the forbid replica never goes on beside any other run,
// whichever side started it — the forbid side waits for the allow side's
// runs (their claims), and the allow side for the forbid side's (the job
// lease). The allow replica's own runs may overlap each other.
func TestRollingChangeFromAllowAllowSideWaits(t *testing.T) {
	for _, first := range []Overlap{OverlapAllow, OverlapForbid} {
		t.Run("first "+string(first), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t)
				rec := &recorder{d: 8 * time.Second, now: time.Now}
				mk := func(o Overlap) *Scheduler {
					sp := cronSpec(t, "j", "*/5 * * * * *", rec)
					sp.Overlap = o
					s, err := New(Config{Replica: string(o), Locker: e.locker, Logger: e.sink.logger(string(o)), Metrics: e.metrics,
						LockTTL: 30 * time.Second, MaxClockSkew: 2 * time.Second, ShutdownGrace: 10 * time.Second,
						Beat: 10 * time.Second, Jobs: []JobSpec{sp}})
					if err != nil {
						t.Fatal(err)
					}
					return s
				}
				second := map[Overlap]Overlap{OverlapAllow: OverlapForbid, OverlapForbid: OverlapAllow}[first]
				stopFirst := running(t, mk(first))
				time.Sleep(6 * time.Second) // the first replica's run of slot 5 goes on to 13 s
				stopSecond := running(t, mk(second))
				// The two sides run different definitions, so neither counts
				// the other in its view: both claim each slot at its due
				// time, and which one's claim lands first is the order the
				// runtime runs them at that instant. Over 40 s (9 slots) one
				// side won them all in about 1 run of 70 under -race; over
				// 120 s (25 slots) the sides meet in every run.
				time.Sleep(120 * time.Second)
				stopSecond()
				stopFirst()
				checkRollingRuns(t, e.sink, rec.all())
			})
		})
	}
}

// checkRollingRuns fails t when a run of the forbid replica overlaps
// another run, or when a side won no slot (neither ran one nor skipped
// one for overlap): the two sides never met.
func checkRollingRuns(t *testing.T, sink *logSink, runs []record) {
	t.Helper()
	base := time.Now() // times are told from the first run's start
	for _, r := range runs {
		if r.Start.Before(base) {
			base = r.Start
		}
	}
	for i, a := range runs {
		for _, b := range runs[i+1:] {
			if a.Run.Replica == string(OverlapAllow) && b.Run.Replica == string(OverlapAllow) {
				continue
			}
			if a.Start.Before(b.End) && b.Start.Before(a.End) {
				sink.dump(t)
				t.Errorf("run of %s on %s (%v–%v) and run of %s on %s (%v–%v, from the first run's start) went on at once",
					slotString(a.Run.Slot), a.Run.Replica, a.Start.Sub(base), a.End.Sub(base),
					slotString(b.Run.Slot), b.Run.Replica, b.Start.Sub(base), b.End.Sub(base))
			}
		}
	}
	won := slotsWon(t, sink, runs)
	t.Logf("slots run or skipped for overlap, per replica: %v", won)
	if won[string(OverlapAllow)] == 0 || won[string(OverlapForbid)] == 0 {
		t.Errorf("slots won per replica %v: want both sides to win some", won)
	}
}

// slotsWon counts, per replica, the slots it won: ran, or skipped for
// overlap after its claim stood.
func slotsWon(t testing.TB, sink *logSink, runs []record) map[string]int {
	won := map[string]int{}
	for _, r := range runs {
		won[r.Run.Replica]++
	}
	for _, ev := range where(sink.events(t), evSlotSkipped, "reason", string(history.ReasonOverlap)) {
		won[ev.str("replica")]++
	}
	return won
}

// TestForbidSideCountsANewerAllowRun: after a reload from allow to
// forbid, a run under allow of a newer slot (15 s) is going on — another
// replica claimed it and read the job lease free before this replica's
// slot 10 took it (its claim stands in for it here). Slot 10 sees that
// claim after it took the lease and is skipped for overlap, naming slot
// 15; nothing runs here until that run ended, then slot 25 runs. (Only an
// older slot's claim counted: slot 10 ran beside it.)
func TestForbidSideCountsANewerAllowRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		ctx := context.Background()
		rec := &recorder{d: time.Second, now: time.Now}
		mk := func(o Overlap) JobSpec {
			sp := cronSpec(t, "j", "*/5 * * * * *", rec)
			sp.Overlap = o
			return sp
		}
		s := e.scheduler("r1", nil, mk(OverlapAllow))
		stop := running(t, s)
		time.Sleep(time.Second)
		if _, err := s.Reload(ctx, "v2", []JobSpec{mk(OverlapForbid)}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Until(bubbleStart.Add(9 * time.Second)))
		other, err := e.locker.Claim(ctx, history.SlotKey("j", bubbleStart.Add(15*time.Second)), 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		other.Keep(ctx)
		time.Sleep(time.Until(bubbleStart.Add(22 * time.Second)))
		if err := other.End(ctx, locking.Ending{DoneTTL: time.Minute, Note: "succeeded"}).Err; err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		stop()
		var slots []string
		for _, r := range rec.all() {
			slots = append(slots, slotString(r.Run.Slot))
			if r.Start.After(bubbleStart.Add(9*time.Second)) && r.Start.Before(bubbleStart.Add(22*time.Second)) {
				e.sink.dump(t)
				t.Errorf("slot %s ran at %v, beside the run of slot 15 (9 s to 22 s)", slotString(r.Run.Slot), r.Start.Sub(bubbleStart))
			}
		}
		if !slices.Contains(slots, slotAt(25)) {
			t.Errorf("slots run %v: want 25 after the other run ended", slots)
		}
		skipped := where(e.sink.events(t), evSlotSkipped, "slot", slotAt(10), "reason", string(history.ReasonOverlap))
		if len(skipped) != 1 || !strings.Contains(skipped[0].str("note"), slotAt(15)) {
			t.Errorf("slot 10's overlap skips %v: want one naming slot 15", skipped)
		}
	})
}

// slowDefinitions is a locker whose reads of the fleet's published
// definitions take delay: a replica's first slots then fire before it
// has learned what the others run.
type slowDefinitions struct {
	locking.Locker
	delay time.Duration
}

func (l slowDefinitions) ReadLog(ctx context.Context, family string, since int64, limit int) ([]locking.LogEntry, error) {
	if family == history.DefinitionsFamily {
		time.Sleep(l.delay)
	}
	return l.Locker.ReadLog(ctx, family, since, limit)
}

// TestRollingChangeBeforeTheFirstDefinitionsRead: a rolling change of
// overlap where the second replica's first slot fires before its first
// read of the fleet's definitions has answered (it takes 2 s here), while
// the first replica does not know of it either (it reads the definitions
// again only every defsBeats beats). The first replica's clock is 100 ms
// behind, so the second claims every slot first. Until its first read
// the second replica keeps both sides apart as within the windows:
//
//   - first allow: its run of slot 5 goes on to 12 s; the forbid replica,
//     started at 9.5 s, wins slot 10 and finds slot 5's claim open
//     (without the read of the claims, it ran slot 10 beside it);
//   - first forbid: its runs follow one another, each slot waiting for
//     the job lease, until its run of slot 20 ends at 29.2 s; the allow
//     replica, started at 29.5 s, wins slot 30 with the lease free and,
//     not knowing yet, takes the job lease with it, and every slot after.
//     (This order passes without the fix too — the forbid replica claims
//     no slot once the allow replica runs, as its clock is behind — and is
//     here to show the allow side's early job lease keeps both running.)
func TestRollingChangeBeforeTheFirstDefinitionsRead(t *testing.T) {
	startAt := map[Overlap]time.Duration{OverlapAllow: 9500 * time.Millisecond, OverlapForbid: 29500 * time.Millisecond}
	for _, first := range []Overlap{OverlapAllow, OverlapForbid} {
		t.Run("first "+string(first), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t)
				rec := &recorder{d: 7 * time.Second, now: time.Now}
				mk := func(o Overlap, l locking.Locker, clock locking.Clock) *Scheduler {
					sp := cronSpec(t, "j", "*/5 * * * * *", rec)
					sp.Overlap = o
					s, err := New(Config{Replica: string(o), Locker: l, Clock: clock, Logger: e.sink.logger(string(o)), Metrics: e.metrics,
						LockTTL: 30 * time.Second, MaxClockSkew: 2 * time.Second, ShutdownGrace: 10 * time.Second,
						Beat: 10 * time.Second, Jobs: []JobSpec{sp}})
					if err != nil {
						t.Fatal(err)
					}
					return s
				}
				second := map[Overlap]Overlap{OverlapAllow: OverlapForbid, OverlapForbid: OverlapAllow}[first]
				start := time.Now() // a whole second: slots fall every 5 s from it
				stopFirst := running(t, mk(first, e.locker, newJumpClock(-100*time.Millisecond)))
				time.Sleep(time.Until(start.Add(startAt[first])))
				stopSecond := running(t, mk(second, slowDefinitions{Locker: e.locker, delay: 2 * time.Second}, nil))
				time.Sleep(30 * time.Second)
				stopSecond()
				stopFirst()
				checkRollingRuns(t, e.sink, rec.all())
			})
		})
	}
}
