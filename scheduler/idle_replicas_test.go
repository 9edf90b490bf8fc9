package scheduler

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
)

// slotCalls records, per slot key, which replicas sent a claim for it
// and which asked whether it was handled.
type slotCalls struct {
	mu      sync.Mutex
	claims  map[string][]string
	handled map[string][]string
}

// slotCounter is one replica's Locker, recording into calls.
type slotCounter struct {
	locking.Locker
	name  string
	calls *slotCalls
}

func (c *slotCounter) Claim(ctx context.Context, key locking.Key, ttl time.Duration, opts ...locking.ClaimOption) (*locking.Lease, error) {
	c.calls.add(&c.calls.claims, key, c.name)
	return c.Locker.Claim(ctx, key, ttl, opts...)
}

func (c *slotCounter) Handled(ctx context.Context, keys []locking.Key) ([]bool, error) {
	for _, k := range keys {
		c.calls.add(&c.calls.handled, k, c.name)
	}
	return c.Locker.Handled(ctx, keys)
}

func (s *slotCalls) add(m *map[string][]string, key locking.Key, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if *m == nil {
		*m = map[string][]string{}
	}
	(*m)[key.String()] = append((*m)[key.String()], name)
}

// of returns the sorted replicas m recorded for slot t of job.
func (s *slotCalls) of(m map[string][]string, job string, t time.Time) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(m[slotKeyString(job, t)])
	slices.Sort(out)
	return out
}

// idleFleet starts the replicas live of an every-second job, every one
// with view as its view of the fleet, recording their slot calls.
func idleFleet(t *testing.T, e *env, live, view []string, rec *recorder) (*slotCalls, func()) {
	calls := &slotCalls{}
	spec := everySecond(t, "tick", rec)
	spec.Overlap = OverlapAllow
	var stops []func()
	for _, name := range live {
		s, err := New(Config{Replica: name, Locker: &slotCounter{Locker: e.locker, name: name, calls: calls},
			Logger: e.sink.logger(name), MaxClockSkew: 2 * time.Second, ShutdownGrace: 5 * time.Second,
			ReconcileEvery: 5 * time.Second, ReconcileAfter: 5 * time.Second, Jobs: []JobSpec{spec}})
		require.NoError(t, err)
		s.fleet.viewSource = func() []string { return view }
		stops = append(stops, running(t, s))
	}
	return calls, func() {
		for _, stop := range stops {
			stop()
		}
	}
}

// linesAbout returns the replicas that wrote a line about slot t.
func linesAbout(evs []event, t time.Time) []string {
	var out []string
	for _, ev := range evs {
		if ev.str("slot") == slotString(t) {
			out = append(out, ev.str("replica"))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Nine live replicas with one view: for every slot, its first candidate
// claims it, its second and its two due fallbacks ask whether it was
// handled (it was: no claim), and the five others do nothing for it — no
// store call, no line. Each slot runs once, on its first candidate.
func TestIdleReplicasPayNothingPerSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{d: 100 * time.Millisecond, now: time.Now}
		names := nineNames()
		calls, stop := idleFleet(t, e, names, names, rec)
		time.Sleep(40 * time.Second)
		stop()

		runs := map[string][]record{}
		for _, r := range rec.all() {
			runs[slotString(r.Run.Slot)] = append(runs[slotString(r.Run.Slot)], r)
		}
		evs := e.sink.events(t)
		for sec := 3; sec <= 38; sec++ {
			slot := bubbleAt(sec)
			order := rankedReplicas("tick", slot, names)
			cands := slices.Sorted(slices.Values(order[:DefaultCandidates]))
			fbs := slices.Sorted(slices.Values(order[DefaultCandidates : DefaultCandidates+dueFallbacks]))
			got := runs[slotString(slot)]
			require.Len(t, got, 1, "slot %s runs", slotString(slot))
			require.Equal(t, order[0], got[0].Run.Replica, "slot %s ran off its first candidate", slotString(slot))
			require.Equal(t, order[:1], calls.of(calls.claims, "tick", slot), "slot %s: claimers", slotString(slot))
			readers := slices.Sorted(slices.Values(append([]string{order[1]}, fbs...)))
			require.Equal(t, readers, calls.of(calls.handled, "tick", slot), "slot %s: Handled readers", slotString(slot))
			for _, n := range linesAbout(evs, slot) {
				require.Contains(t, append(cands, fbs...), n, "slot %s: a line from an idle replica", slotString(slot))
			}
		}
	})
}

// Four of nine replicas run, and every view still lists all nine (the
// dead ones' heartbeats not yet aged out): a slot whose candidates and
// fallbacks are all among the dead is tried by nobody, and the reconciler
// reports it missed, once; every other slot runs once, and no slot both
// runs and is reported.
func TestDeadTopRanksLeaveTheSlotToTheReconciler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{d: 100 * time.Millisecond, now: time.Now}
		names := nineNames()
		live := names[:4]
		_, stop := idleFleet(t, e, live, names, rec)
		time.Sleep(150 * time.Second)
		stop()

		runs := map[string]int{}
		for _, r := range rec.all() {
			runs[slotString(r.Run.Slot)]++
		}
		missed := map[string]int{}
		for _, ev := range where(e.sink.events(t), evSlotMissed, "job", "tick") {
			missed[ev.str("slot")]++
		}
		orphans := 0
		for sec := 3; sec <= 120; sec++ {
			slot := bubbleAt(sec)
			top := rankedReplicas("tick", slot, names)[:DefaultCandidates+dueFallbacks]
			anyLive := slices.ContainsFunc(top, func(n string) bool { return slices.Contains(live, n) })
			s := slotString(slot)
			if !anyLive {
				orphans++
				require.Zero(t, runs[s], "slot %s (top %v, all dead) ran", s, top)
				require.Equal(t, 1, missed[s], "slot %s (top %v, all dead): slot.missed lines", s, top)
				continue
			}
			require.Equal(t, 1, runs[s], "slot %s (top %v) runs", s, top)
			require.Zero(t, missed[s], "slot %s ran and was reported missed", s)
		}
		t.Logf("%d slots had their top ranks all dead", orphans)
		require.Positive(t, orphans, fmt.Sprintf("no slot had its top %d all dead: pick other names", DefaultCandidates+dueFallbacks))
	})
}
