package scheduler

import (
	"context"
	"errors"
	"sort"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// groupMetrics is countMetrics with the group gauge: the highest value
// each replica's gauge took, and its last.
type groupMetrics struct {
	*countMetrics
	mu         sync.Mutex
	most, last map[string]int
}

func (m *groupMetrics) GroupRunning(group string, running int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.most[group] = max(m.most[group], running)
	m.last[group] = running
}

// mostAtOnce is the largest number of runs of recs going on at one
// instant, from their intervals.
func mostAtOnce(recs ...*recorder) int {
	type edge struct {
		at time.Time
		d  int
	}
	var edges []edge
	for _, r := range recs {
		for _, x := range r.all() {
			edges = append(edges, edge{x.Start, 1}, edge{x.End, -1})
		}
	}
	// Ends before starts at one instant: a permit freed is taken after.
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].at.Equal(edges[j].at) {
			return edges[i].d < edges[j].d
		}
		return edges[i].at.Before(edges[j].at)
	})
	most, n := 0, 0
	for _, e := range edges {
		n += e.d
		most = max(most, n)
	}
	return most
}

// TestGroupLimit: four every-second jobs (overlap allow, runs of 2.5 s)
// in a group of limit 2 on two replicas: never more than 2 bodies at
// once; the slots that found no permit before their lateness bound are
// skipped group_full, each with its history entry, never missed; every
// slot is explained once; per job, a run that started later has the
// higher token; no permit is left held afterwards.
func TestGroupLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		gm := &groupMetrics{countMetrics: e.metrics, most: map[string]int{}, last: map[string]int{}}
		var recs []*recorder
		var specs []JobSpec
		for _, name := range []string{"a", "b", "c", "d"} {
			rec := &recorder{d: 2500 * time.Millisecond, now: time.Now}
			spec := everySecond(t, name, rec)
			spec.Overlap, spec.Group = OverlapAllow, &Group{Name: "heavy", Limit: 2}
			recs, specs = append(recs, rec), append(specs, spec)
		}
		var stops []func()
		for i, r := range []string{"r1", "r2"} {
			s, err := New(Config{Replica: r, Locker: e.locker, Clock: newJumpClock(time.Duration(i) * 300 * time.Millisecond),
				Logger: e.sink.logger(r), Metrics: gm, LockTTL: 30 * time.Second, MaxClockSkew: 2 * time.Second,
				ShutdownGrace: 5 * time.Second, Jobs: specs})
			if err != nil {
				t.Fatal(err)
			}
			stops = append(stops, running(t, s))
		}
		time.Sleep(15 * time.Second)
		for _, stop := range stops {
			stop()
		}

		t.Logf("%d group_full skips, %d runs at most", len(where(e.sink.events(t), "slot.skipped", "reason", "group_full")), mostAtOnce(recs...))
		if most := mostAtOnce(recs...); most != 2 {
			t.Errorf("%d runs of the group at once, want 2 (the limit, reached)", most)
		}
		if gm.most["heavy"] > 2 || gm.last["heavy"] != 0 {
			t.Errorf("slotlock_group_running: highest %d, last %d", gm.most["heavy"], gm.last["heavy"])
		}
		evs := e.sink.events(t)
		full := where(evs, "slot.skipped", "reason", "group_full")
		if len(full) < 10 {
			t.Fatalf("%d group_full skips, want most slots", len(full))
		}
		for _, f := range full {
			if f.str("level") != "INFO" || f.str("group") != "heavy" || f.num("limit") != 2 {
				t.Errorf("group_full skip: %v", f)
			}
		}
		if n := len(where(evs, "slot.missed")); n != 0 {
			t.Errorf("%d slots missed", n)
		}
		explained := map[string]int{}
		for _, f := range full {
			explained[f.str("job")+" "+f.str("slot")]++
		}
		for i, r := range recs {
			for _, x := range r.all() {
				explained[specs[i].Name+" "+slotString(x.Run.Slot)]++
			}
		}
		for k, n := range explained {
			if n != 1 {
				t.Errorf("%s explained %d times", k, n)
			}
		}
		// Each group_full skip is in its job's history, as skipped/group_full.
		for _, f := range full {
			slot, _ := time.Parse(time.RFC3339, f.str("slot"))
			h, err := history.ReadEntries(context.Background(), e.locker, f.str("job"), slot, 100)
			if err != nil {
				t.Fatal(err)
			}
			if len(h) == 0 || h[len(h)-1].Slot != f.str("slot") || h[len(h)-1].Outcome != history.OutcomeSkipped ||
				h[len(h)-1].Reason != history.ReasonGroupFull {
				t.Errorf("%s %s: history %+v, want skipped/group_full", f.str("job"), f.str("slot"), h)
			}
		}
		// Per job, a run that started later has the higher token, also
		// when an older slot waited longer for its permit.
		for i, r := range recs {
			runs := r.all()
			sort.Slice(runs, func(x, y int) bool { return runs[x].Start.Before(runs[y].Start) })
			for k := 1; k < len(runs); k++ {
				if runs[k].Start.After(runs[k-1].Start) && runs[k].Run.FencingToken <= runs[k-1].Run.FencingToken {
					t.Errorf("%s: slot %s started after slot %s with token %d <= %d", specs[i].Name,
						slotString(runs[k].Run.Slot), slotString(runs[k-1].Run.Slot), runs[k].Run.FencingToken, runs[k-1].Run.FencingToken)
				}
			}
		}
		// Every permit was ended.
		sem := locking.Semaphore{Name: "heavy", Limit: 2}
		for range 2 {
			if _, err := sem.Acquire(context.Background(), e.locker, time.Second, 0); err != nil {
				t.Errorf("a permit still held after the runs: %v", err)
			}
		}
	})
}

// TestGroupTriggerAndBackfill: a manual run and a backfilled slot take a
// permit too; with every permit held elsewhere each waits the lateness
// bound and fails with ErrGroupFull, marking nothing but the backfilled
// slot's missed verdict (it stays to run, for a later backfill); with a
// permit free they run, and free it.
func TestGroupTriggerAndBackfill(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{d: 100 * time.Millisecond, now: time.Now}
		sched, _ := ParseSchedule("0 0 * * * *", time.UTC)
		spec := JobSpec{Name: "job", Schedule: sched, Job: rec, Group: &Group{Name: "g", Limit: 1}}
		s := e.scheduler("r1", nil, spec)
		ctx := context.Background()
		sem := locking.Semaphore{Name: "g", Limit: 1}
		other, err := sem.Acquire(ctx, e.locker, time.Minute, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Trigger(ctx, "job"); !errors.Is(err, ErrGroupFull) {
			t.Errorf("trigger with the group full: %v, want ErrGroupFull", err)
		}
		slot := bubbleStart.Add(-time.Hour)
		if _, err := s.RunSlot(ctx, "job", slot); !errors.Is(err, ErrGroupFull) {
			t.Errorf("backfill with the group full: %v, want ErrGroupFull", err)
		}
		if len(rec.all()) != 0 {
			t.Fatalf("ran with the group full: %+v", rec.all())
		}
		// The backfill judged the slot first (nobody ran it: missed), an
		// outcome a later backfill still runs.
		if h, _ := history.ReadEntries(ctx, e.locker, "job", time.Time{}, 10); len(h) != 1 || h[0].Outcome != history.OutcomeMissed || !h[0].Backfillable() {
			t.Errorf("history after refusals: %+v, want the backfill's missed verdict only", h)
		}
		other.End(ctx, locking.Ending{})
		if err := s.Trigger(ctx, "job"); err != nil {
			t.Errorf("trigger with a permit free: %v", err)
		}
		if _, err := s.RunSlot(ctx, "job", slot); err != nil {
			t.Errorf("backfill with a permit free: %v", err)
		}
		if n := len(rec.all()); n != 2 {
			t.Errorf("%d runs, want 2", n)
		}
		if _, err := sem.Acquire(ctx, e.locker, time.Second, 0); err != nil {
			t.Errorf("the permit still held after the runs: %v", err)
		}
	})
}

// permitsElsewhere takes the permits on a locker of their own, so that a
// test can make them expire alone (its clock jumps) while the run's claim
// and job lease stay valid.
type permitsElsewhere struct {
	locking.Locker
	permits locking.Locker
}

func (p permitsElsewhere) Acquire(ctx context.Context, key locking.Key, ttl time.Duration) (*locking.Lease, error) {
	if _, ok := locking.IsPermit(key); ok {
		return p.permits.Acquire(ctx, key, ttl)
	}
	return p.Locker.Acquire(ctx, key, ttl)
}

// TestGroupPermitLostCancelsTheRun: a run whose permit could not be
// renewed before it expired is canceled as for a lost claim (lock.lost
// naming the permit, run.canceled reason lock_lost), and its slot ends
// canceled.
func TestGroupPermitLostCancelsTheRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		clock := newJumpClock(0)
		e.locker = permitsElsewhere{Locker: e.locker, permits: locking.NewLocal(locking.Options{Replica: "permits", Clock: clock})}
		rec := &recorder{d: time.Hour, now: time.Now}
		sched, _ := ParseSchedule("@every 1h", time.UTC)
		spec := JobSpec{Name: "victim", Schedule: sched, Job: rec, Group: &Group{Name: "g", Limit: 1}}
		s := e.scheduler("r1", nil, spec)
		stop := running(t, s)
		time.Sleep(time.Hour + 5*time.Second)
		clock.jump(time.Minute) // the permit alone expired
		time.Sleep(15 * time.Second)
		stop()
		runs := rec.all()
		if len(runs) != 1 || !errors.Is(runs[0].Cause, locking.ErrLockLost) {
			t.Fatalf("runs: %+v", runs)
		}
		evs := e.sink.events(t)
		if lost := where(evs, "lock.lost"); len(lost) != 1 || lost[0].str("key") != "permit:0" {
			t.Errorf("lock.lost: %v, want one naming permit:0", lost)
		}
		if c := where(evs, "run.canceled"); len(c) != 1 || c[0].str("reason") != "lock_lost" {
			t.Errorf("run.canceled: %v", c)
		}
		h, err := history.ReadEntries(context.Background(), e.locker, "victim", time.Time{}, 10)
		if err != nil || len(h) != 1 || h[0].Outcome != history.OutcomeCanceled || h[0].Reason != history.ReasonLockLost {
			t.Errorf("history %+v (%v), want the slot canceled lock_lost", h, err)
		}
	})
}
