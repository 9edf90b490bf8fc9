package scheduler

import (
	"sync"
	"testing"
	"time"
)

// TestRedisJitter: three schedulers over three real redis-server nodes,
// clocks at +1.6s, 0 and -1.6s, two jobs with jitter (up to their whole
// interval). Every replica claims every slot at the same offset after the
// slot, on its own clock — the offsets agree without any talk — within
// [0, jitter); the runs carry the nominal slot; every slot runs exactly
// once.
func TestRedisJitter(t *testing.T) {
	needRedis(t)
	if testing.Short() {
		t.Skip("real time")
	}
	t.Parallel()
	type jobDef struct {
		name, spec string
		jitter     time.Duration
	}
	defs := []jobDef{{"jit-every2", "@every 2s", 2 * time.Second}, {"jit-cron3", "*/3 * * * * *", 2500 * time.Millisecond}}
	ledgers := map[string]*ledger{}
	for _, d := range defs {
		ledgers[d.name] = &ledger{d: 50 * time.Millisecond}
	}
	var mu sync.Mutex
	spies := map[string]*claimSpy{}
	c := startCluster(t, func() []JobSpec {
		var specs []JobSpec
		for _, d := range defs {
			sched, err := ParseSchedule(d.spec, time.UTC)
			if err != nil {
				t.Fatal(err)
			}
			specs = append(specs, JobSpec{Name: d.name, Spec: d.spec, Schedule: sched, Job: ledgers[d.name],
				Jitter: d.jitter})
		}
		return specs
	}, func(cfg *Config) {
		spy := newClaimSpy(cfg.Locker, cfg.Clock)
		cfg.Locker = spy
		// Every replica a candidate: each must claim each slot at its due
		// time on its own clock (with clocks 1.6s apart, a fallback's
		// check would often come before a slow candidate's claim).
		cfg.Candidates = -1
		mu.Lock()
		spies[cfg.Replica] = spy
		mu.Unlock()
	})
	begin := time.Now()
	time.Sleep(24 * time.Second)
	stopAt := time.Now()
	c.stopAll()

	evs := c.sink.events(t)
	// How long after its due time (on its own clock) a replica may claim:
	// the spread (5ms) plus this machine's scheduling delays.
	const slack = 500 * time.Millisecond
	for _, d := range defs {
		sched, _ := ParseSchedule(d.spec, time.UTC)
		counts := perSlot(ledgers[d.name].all())
		for sl, n := range counts {
			if n > 1 {
				t.Errorf("%s: slot %s ran %d times", d.name, slotString(time.Unix(sl, 0)), n)
			}
		}
		checked, offsets := 0, map[time.Duration]bool{}
		// Slots whose every attempt fell between the start of the last
		// replica and the stop of the first: due at least 2s after the
		// start (the slowest clock is 1.6s behind) and 2s before the stop.
		for sl := sched.Next(begin.Add(-d.jitter)); ; sl = sched.Next(sl) {
			off := JitterOffset(d.name, sl, d.jitter)
			due := sl.Add(off)
			if due.Before(begin.Add(2 * time.Second)) {
				continue
			}
			if due.After(stopAt.Add(-2 * time.Second)) {
				break
			}
			if off < 0 || off >= d.jitter {
				t.Fatalf("%s: slot %s offset %v outside [0, %v)", d.name, slotString(sl), off, d.jitter)
			}
			offsets[off] = true
			for name, spy := range spies {
				at, ok := spy.claimedAt(d.name, sl)
				if !ok {
					t.Errorf("%s: %s never claimed slot %s", d.name, name, slotString(sl))
					continue
				}
				if lag := at.Sub(due); lag < 0 || lag > slack {
					t.Errorf("%s: %s claimed slot %s %v after its due time on its clock (offset %v)",
						d.name, name, slotString(sl), lag, off)
				}
			}
			if counts[sl.Unix()] != 1 {
				c.sink.dump(t)
				t.Fatalf("%s: slot %s ran %d times", d.name, slotString(sl), counts[sl.Unix()])
			}
			// The winner logged the nominal slot and the offset.
			st := where(evs, "run.started", "job", d.name, "slot", slotString(sl))
			if len(st) != 1 || st[0].num("jitter_ms") != float64(off.Milliseconds()) {
				t.Errorf("%s: run.started of slot %s: %v", d.name, slotString(sl), st)
			}
			checked++
		}
		if checked < 5 || len(offsets) < checked/2 {
			t.Errorf("%s: %d slots checked, %d distinct offsets", d.name, checked, len(offsets))
		}
		for _, r := range ledgers[d.name].all() {
			if r.Run.Slot.Nanosecond() != 0 || !sched.Next(r.Run.Slot.Add(-time.Second)).Equal(r.Run.Slot) {
				t.Errorf("%s: run with slot %v, not a nominal slot", d.name, r.Run.Slot)
			}
		}
		t.Logf("%s: %d slots checked, %d runs; by replica %v", d.name, checked, len(ledgers[d.name].all()),
			byReplica(ledgers[d.name].all()))
	}
}
