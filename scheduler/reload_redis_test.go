package scheduler

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"
)

// TestRedisReloadUnderLoad: three replicas over three real nodes, clocks
// at ±0.8 × max_clock_skew, run every-second jobs. While they run, all
// three reload at once: one job added, one removed, one rescheduled (every
// second to */3); later all three get a bad reload (a job defined twice),
// which they refuse. Per slot, from the jobs' own ledgers:
//
//   - the kept job ran every slot exactly once, from start to end;
//   - the removed job ran every slot up to the reload once, and none after;
//   - the rescheduled job ran every slot of the old schedule up to the
//     reload once, every slot of the new one after it once, and no other;
//   - the added job ran every slot from the reload on once, and none before;
//   - no slot ran twice, and the reconciler (judging slots 8 s old every
//     second) declared none missed;
//   - after the bad reload every replica still runs, and heartbeats, the
//     reloaded definitions.
//
// "Up to" and "from" leave a margin of the clock skew and a second around
// the reload: a replica whose clock is ahead fires a slot earlier in real
// time, so both definitions own the slots in between.
func TestRedisReloadUnderLoad(t *testing.T) {
	needRedis(t)
	if testing.Short() {
		t.Skip("25s of real time")
	}
	t.Parallel()
	keep, gone, resched, added := &ledger{d: 50 * time.Millisecond}, &ledger{d: 50 * time.Millisecond},
		&ledger{d: 50 * time.Millisecond}, &ledger{d: 50 * time.Millisecond}
	v1 := func() []JobSpec {
		return []JobSpec{everySecond(t, "keep", keep), everySecond(t, "gone", gone), everySecond(t, "resched", resched)}
	}
	v2 := func() []JobSpec {
		return []JobSpec{everySecond(t, "keep", keep), cronSpec(t, "resched", "*/3 * * * * *", resched),
			everySecond(t, "added", added)}
	}
	c := startCluster(t, v1, func(cfg *Config) {
		cfg.DefinitionsHash = "v1"
		cfg.Beat = 500 * time.Millisecond
		cfg.ReconcileEvery, cfg.ReconcileAfter = time.Second, time.Second
	})
	begin := time.Now()
	ctx := context.Background()
	time.Sleep(8 * time.Second)

	reloaded := make([]time.Time, len(c.replicas))
	var wg sync.WaitGroup
	for i, r := range c.replicas {
		wg.Go(func() {
			if _, err := r.sched.Reload(ctx, "v2", v2()); err != nil {
				t.Errorf("%s: Reload: %v", r.name, err)
			}
			reloaded[i] = time.Now()
		})
	}
	wg.Wait()
	firstR, lastR := slices.MinFunc(reloaded, time.Time.Compare), slices.MaxFunc(reloaded, time.Time.Compare)
	time.Sleep(6 * time.Second)
	for _, r := range c.replicas {
		if _, err := r.sched.Reload(ctx, "v3", append(v2(), everySecond(t, "keep", keep))); err == nil {
			t.Errorf("%s: a job defined twice was accepted", r.name)
		}
		if h := r.sched.DefinitionsHash(); h != "v2" {
			t.Errorf("%s: hash %q after a rejected reload, want v2", r.name, h)
		}
	}
	time.Sleep(8 * time.Second)
	fleet, err := history.ReadFleet(ctx, c.replicas[0].locker)
	if err != nil {
		t.Fatal(err)
	}
	// The reconciler did judge the new definitions' slots after the reload.
	for _, name := range []string{"resched", "added"} {
		w, err := c.replicas[0].locker.ReadRecord(ctx, history.ReconciledKey(name))
		if err != nil || w <= lastR.Unix() {
			t.Errorf("%s: reconciled up to %s (%v), want past the reload", name, time.Unix(w, 0).UTC().Format(time.TimeOnly), err)
		}
	}
	c.stopAll()
	end := time.Now()

	for _, r := range fleet.Replicas {
		if r.DefinitionsHash != "v2" || r.DefinitionsSince.Before(firstR.Add(-itSkew)) || r.Jobs != 3 {
			t.Errorf("heartbeat of %s: hash %q since %v, %d jobs; want v2 since the reload, 3 jobs",
				r.Replica, r.DefinitionsHash, r.DefinitionsSince, r.Jobs)
		}
	}
	if len(fleet.Replicas) != len(c.replicas) {
		t.Errorf("%d heartbeats, want %d", len(fleet.Replicas), len(c.replicas))
	}

	margin := itSkew + time.Second
	first := begin.Truncate(time.Second).Add(margin)
	last := end.Add(-margin)
	before, after := firstR.Add(-margin), lastR.Add(margin)
	type window struct {
		from, to time.Time
		every    int64 // the slots that must run: every this many seconds
	}
	// check: every slot of must ran once, no slot never holds ran, no
	// slot ran twice.
	check := func(name string, l *ledger, must []window, never func(u int64) bool) {
		t.Helper()
		ran := perSlot(l.all())
		for _, w := range must {
			for u := w.from.Unix(); u <= w.to.Unix(); u++ {
				if u%w.every == 0 && ran[u] != 1 {
					t.Errorf("%s: slot %s ran %d times, want once", name, time.Unix(u, 0).UTC().Format(time.TimeOnly), ran[u])
				}
			}
		}
		for u, n := range ran {
			switch {
			case n > 1:
				t.Errorf("%s: slot %s ran %d times", name, time.Unix(u, 0).UTC().Format(time.TimeOnly), n)
			case never != nil && never(u):
				t.Errorf("%s: slot %s ran, which no definition in force then has", name, time.Unix(u, 0).UTC().Format(time.TimeOnly))
			}
		}
	}
	check("keep", keep, []window{{first, last, 1}}, nil)
	check("gone", gone, []window{{first, before, 1}}, func(u int64) bool { return u >= after.Unix() })
	check("resched", resched, []window{{first, before, 1}, {after, last, 3}},
		func(u int64) bool { return u >= after.Unix() && u%3 != 0 })
	check("added", added, []window{{after, last, 1}}, func(u int64) bool { return u <= before.Unix() })
	evs := c.sink.events(t)
	if missed := where(evs, "slot.missed"); len(missed) != 0 {
		c.sink.dump(t)
		t.Errorf("%d slots declared missed, the first: %v", len(missed), missed[0])
	}
	if n := len(where(evs, "run.canceled")); n != 0 {
		t.Errorf("%d runs canceled", n)
	}
	t.Logf("reloads between %s and %s; checked slots %s..%s", firstR.Format(time.StampMilli), lastR.Format(time.StampMilli),
		first.Format(time.TimeOnly), last.Format(time.TimeOnly))
}
