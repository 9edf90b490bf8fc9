package scheduler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// claimLog records which replicas claimed which keys, and how many
// Handled calls they made.
type claimLog struct {
	mu      sync.Mutex
	claims  map[string][]string // key -> replicas, in call order
	handled int
}

// claimCounter is one replica's Locker, recording into log.
type claimCounter struct {
	locking.Locker
	name string
	log  *claimLog
}

func (c *claimCounter) Claim(ctx context.Context, key locking.Key, ttl time.Duration, opts ...locking.ClaimOption) (*locking.Lease, error) {
	c.log.mu.Lock()
	if c.log.claims == nil {
		c.log.claims = map[string][]string{}
	}
	c.log.claims[key.String()] = append(c.log.claims[key.String()], c.name)
	c.log.mu.Unlock()
	return c.Locker.Claim(ctx, key, ttl, opts...)
}

func (c *claimCounter) Handled(ctx context.Context, keys []locking.Key) ([]bool, error) {
	c.log.mu.Lock()
	c.log.handled++
	c.log.mu.Unlock()
	return c.Locker.Handled(ctx, keys)
}

func (l *claimLog) claimers(job string, slot time.Time) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.claims[slotKeyString(job, slot)])
}

func slotKeyString(job string, slot time.Time) string {
	return history.SlotKey(job, slot).String()
}

// candidateFleet starts n replicas r0..r(n-1) of an every-second job on
// one store, recording their claims; view, when set, is every replica's
// view of the fleet instead of the heartbeats.
func candidateFleet(t *testing.T, e *env, n int, rec *recorder, view func() []string) ([]*Scheduler, *claimLog, func()) {
	log := &claimLog{}
	spec := everySecond(t, "tick", rec)
	// Runs of slots may overlap: a slot run by its fallbacks (1s late)
	// does not hold back the next one's start.
	spec.Overlap = OverlapAllow
	var scheds []*Scheduler
	var stops []func()
	for i := range n {
		name := fmt.Sprintf("r%d", i)
		s, err := New(Config{Replica: name, Locker: &claimCounter{Locker: e.locker, name: name, log: log},
			Logger: e.sink.logger(name), MaxClockSkew: 2 * time.Second, ShutdownGrace: 5 * time.Second,
			Jobs: []JobSpec{spec}})
		require.NoError(t, err)
		if view != nil {
			s.fleet.viewSource = view
		}
		scheds = append(scheds, s)
		stops = append(stops, running(t, s))
	}
	return scheds, log, func() {
		for _, stop := range stops {
			stop()
		}
	}
}

// Four replicas that see each other in the heartbeats agree on every
// slot's ranks (one of each, 0 to 3); once the view formed, only the
// first candidate claims a slot, at its due time: the second, SecondDelay
// after it, and the fallbacks, later, find it handled: one Handled call
// each per instant, no claim.
func TestCandidatesRanksAndTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{d: 100 * time.Millisecond, now: time.Now}
		scheds, log, stop := candidateFleet(t, e, 4, rec, nil)
		time.Sleep(20 * time.Second)
		// The ranks as the replicas' views gave them while the slots
		// fired: once stopping, a replica leaves the others' views.
		cands := map[int][]string{}
		for sec := 5; sec <= 18; sec++ {
			slot := bubbleAt(sec)
			var ranks []int
			for _, s := range scheds {
				rank, fb := s.SlotRank("tick", slot)
				ranks = append(ranks, rank)
				require.Equal(t, rank >= DefaultCandidates, fb, "%s rank %d", s.cfg.Replica, rank)
				if !fb {
					cands[sec] = append(cands[sec], s.cfg.Replica)
				}
			}
			slices.Sort(ranks)
			require.Equal(t, []int{0, 1, 2, 3}, ranks, "slot %s", slotString(slot))
		}
		stop()

		runs := map[string][]record{}
		for _, r := range rec.all() {
			runs[slotString(r.Run.Slot)] = append(runs[slotString(r.Run.Slot)], r)
		}
		for sec := 5; sec <= 18; sec++ {
			slot := bubbleAt(sec)
			cands := cands[sec]
			got := runs[slotString(slot)]
			require.Len(t, got, 1, "slot %s runs", slotString(slot))
			require.Contains(t, cands, got[0].Run.Replica, "slot %s ran on a candidate", slotString(slot))
			d := got[0].Start.Sub(slot)
			require.True(t, d >= 0 && d <= DefaultSpread, "slot %s started %v after its due time", slotString(slot), d)
			require.Equal(t, []string{got[0].Run.Replica}, log.claimers("tick", slot),
				"slot %s: only its first candidate claims", slotString(slot))
		}
		log.mu.Lock()
		defer log.mu.Unlock()
		// The second candidate and two fallbacks per slot, one call each
		// per slot (one job: one slot per instant), at most 20 slots.
		require.LessOrEqual(t, log.handled, 3*20)
		require.Greater(t, log.handled, 0)
	})
}

// A slot whose two candidates are dead but still in every view runs once,
// by a fallback, half a second after its due time (Fallback, at most half
// the time to the job's next slot); a slot whose first candidate is dead,
// by its second, SecondDelay after it; a slot whose first candidate is
// live runs on time; and the runs start in fencing-token order (overlap
// allow: a fallback run must not start after the next slot's run with a
// lower token). Every replica's view lists r3 and r4, which never run.
func TestDeadCandidatesRunViaFallback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{d: 100 * time.Millisecond, now: time.Now}
		all := []string{"r0", "r1", "r2", "r3", "r4"}
		_, _, stop := candidateFleet(t, e, 3, rec, func() []string { return all })
		time.Sleep(61 * time.Second)
		stop()

		runs := map[string][]record{}
		for _, r := range rec.all() {
			runs[slotString(r.Run.Slot)] = append(runs[slotString(r.Run.Slot)], r)
		}
		viaFallback, viaSecond := 0, 0
		dead := func(name string) bool { return name == "r3" || name == "r4" }
		for sec := 1; sec <= 59; sec++ {
			slot := bubbleAt(sec)
			got := runs[slotString(slot)]
			require.Len(t, got, 1, "slot %s runs", slotString(slot))
			top := rankedReplicas("tick", slot, all)[:DefaultCandidates]
			d := got[0].Start.Sub(slot)
			var want time.Duration
			switch {
			case dead(top[0]) && dead(top[1]):
				viaFallback++
				want = min(DefaultFallback, time.Second/2)
			case dead(top[0]):
				viaSecond++
				want = DefaultSecondDelay
			}
			require.True(t, d >= want && d <= want+DefaultSpread,
				"slot %s (candidates %v) started %v after its due time, want %v", slotString(slot), top, d, want)
		}
		require.Positive(t, viaFallback, "no slot had both dead replicas as candidates: pick other names")
		require.Positive(t, viaSecond, "no slot had a dead first candidate and a live second: pick other names")
		started := rec.all()
		slices.SortFunc(started, func(a, b record) int { return a.Start.Compare(b.Start) })
		for i := 1; i < len(started); i++ {
			require.Greater(t, started[i].Run.FencingToken, started[i-1].Run.FencingToken,
				"slot %s started after slot %s with a lower token", slotString(started[i].Run.Slot), slotString(started[i-1].Run.Slot))
		}
		for _, ev := range where(e.sink.events(t), "slot.skipped") {
			require.Contains(t, []string{"held", "done"}, ev.str("reason"), "%v", ev)
		}
	})
}

// rankedReplicas orders names by their rendezvous score for slot t of job,
// best first: the order slotRank counts.
func rankedReplicas(job string, t time.Time, names []string) []string {
	out := slices.Clone(names)
	slices.SortFunc(out, func(a, b string) int {
		h := slotHash(job, t)
		sa, sb := slotScore(h, replicaSeed(a)), slotScore(h, replicaSeed(b))
		switch {
		case sa > sb:
			return -1
		case sa < sb:
			return 1
		}
		return strings.Compare(a, b)
	})
	return out
}

// Fallback must leave room within the lateness bound.
func TestValidateFallback(t *testing.T) {
	l := locking.NewLocal(locking.Options{})
	_, err := New(Config{Locker: l, Fallback: 3 * time.Second})
	var fe *FieldError
	require.True(t, errors.As(err, &fe) && fe.Field == "Fallback", "%v", err)
	_, err = New(Config{Locker: l, Fallback: -time.Second})
	require.True(t, errors.As(err, &fe) && fe.Field == "Fallback", "%v", err)
	s, err := New(Config{Locker: l, MaxClockSkew: 100 * time.Millisecond, Lateness: 600 * time.Millisecond})
	require.NoError(t, err)
	require.Less(t, s.lateness/2, DefaultFallback)
	require.Equal(t, s.lateness/2, s.fleet.fallback, "the default is at most half the lateness bound")
	s, err = New(Config{Locker: l})
	require.NoError(t, err)
	require.Equal(t, DefaultFallback, s.fleet.fallback)
	require.Equal(t, DefaultCandidates, s.fleet.candidates())
	s, err = New(Config{Locker: l, Candidates: -1})
	require.NoError(t, err)
	require.Equal(t, 0, s.fleet.candidates())
}

// A replica past its capacity (admission full) drops its fallback slots
// without any store call: no Handled read, no claim; its slots as a later
// candidate it still checks. With room again, the same batch is checked
// (one Handled call).
func TestBusyReplicaDropsFallbacks(t *testing.T) {
	e := newEnv(t)
	log := &claimLog{}
	spec := everySecond(t, "tick", &recorder{now: time.Now})
	s, err := New(Config{Replica: "r0", Locker: &claimCounter{Locker: e.locker, name: "r0", log: log},
		Logger: e.sink.logger("r0"), Jobs: []JobSpec{spec}})
	require.NoError(t, err)
	j := s.jobList()[0]
	slot := time.Now().Truncate(time.Second)
	batch := []dueSlot{{j: j, t: slot}, {j: j, t: slot.Add(time.Second)}}

	s.admit.mu.Lock()
	s.admit.sending = int(s.admit.limit)
	s.admit.mu.Unlock()
	require.True(t, s.admit.busy())
	s.admit.checkBatch(batch)
	log.mu.Lock()
	require.Zero(t, log.handled, "a busy replica read the stores for its fallbacks")
	require.Empty(t, log.claims, "a busy replica claimed a fallback slot")
	log.mu.Unlock()

	s.admit.mu.Lock()
	s.admit.sending = 0
	s.admit.mu.Unlock()
	require.False(t, s.admit.busy())
	s.admit.checkBatch(batch[:0:0])
	s.admit.checkBatch(batch)
	log.mu.Lock()
	require.Equal(t, 1, log.handled, "with room, the fallbacks are checked in one call")
	log.mu.Unlock()
	// Their attempts run on goroutines of their own: let them end before
	// the next step counts claims, or one of theirs is counted as its.
	s.admit.wg.Wait()
	log.mu.Lock()
	log.handled, log.claims = 0, nil
	log.mu.Unlock()

	s.admit.mu.Lock()
	s.admit.sending = int(s.admit.limit)
	s.admit.mu.Unlock()
	s.admit.checkBatch([]dueSlot{batch[0], {j: j, t: slot.Add(2 * time.Second), candidate: true}})
	log.mu.Lock()
	require.Equal(t, 1, log.handled, "a busy replica checks its slots as a later candidate")
	require.Empty(t, log.claims, "its claim waits for its turn")
	log.mu.Unlock()
}

// A replica that stops says so in a last heartbeat, and the others drop
// it from their view at their next look (a beat), not three beats later.
func TestStoppedReplicaLeavesTheView(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{d: 10 * time.Millisecond, now: time.Now}
		spec := everySecond(t, "tick", rec)
		var scheds []*Scheduler
		var stops []func()
		for i := range 3 {
			name := fmt.Sprintf("r%d", i)
			s, err := New(Config{Replica: name, Locker: e.locker, Logger: e.sink.logger(name),
				ShutdownGrace: time.Second, Jobs: []JobSpec{spec}})
			require.NoError(t, err)
			scheds = append(scheds, s)
			stops = append(stops, running(t, s))
		}
		time.Sleep(5 * time.Second)
		view := func() []string { return scheds[0].fleet.view.Load().names }
		require.Equal(t, []string{"r0", "r1", "r2"}, view())

		stops[2]()
		time.Sleep(DefaultBeat + time.Second) // r0's next look at the fleet
		require.Equal(t, []string{"r0", "r1"}, view(), "a stopped replica is still a candidate")
		stops[1]()
		stops[0]()
	})
}

// During a reload that changes a job's schedule, the replicas run two
// definitions of it, and one that has not reloaded still counts the
// others among its candidates (its view is read once a beat). r0 runs the
// old */2 schedule and sees r0, r1, r2; r1 runs the new */3 one with a
// view of its own; r2 is gone. r0's slots that r1 and r2 outrank go to
// r0's fallback, whose claim must not land at a whole second — the due
// time of the other definition's next slot — where the two claims race
// and the old slot can take the higher token but start first (the e2e
// reload scenario: token 8 for slot :50 started 2 ms before token 7 for
// slot :51). So the runs start at distinct instants, in token order.
func TestFallbackDuringAReloadKeepsTokenOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{d: 100 * time.Millisecond, now: time.Now}
		var stops []func()
		for _, r := range []struct{ name, spec string }{{"r0", "*/2 * * * * *"}, {"r1", "*/3 * * * * *"}} {
			sched, err := ParseSchedule(r.spec, time.UTC)
			require.NoError(t, err)
			spec := JobSpec{Name: "resched", Spec: r.spec, Schedule: sched, Job: rec, Plugin: "test", Overlap: OverlapAllow}
			s, err := New(Config{Replica: r.name, Locker: e.locker, Logger: e.sink.logger(r.name),
				MaxClockSkew: 2 * time.Second, ShutdownGrace: 5 * time.Second, Jobs: []JobSpec{spec}})
			require.NoError(t, err)
			view := []string{r.name}
			if r.name == "r0" {
				view = []string{"r0", "r1", "r2"}
			}
			s.fleet.viewSource = func() []string { return view }
			stops = append(stops, running(t, s))
		}
		time.Sleep(61 * time.Second)
		for _, stop := range stops {
			stop()
		}

		raced := 0
		for sec := 2; sec <= 58; sec += 2 {
			slot := bubbleAt(sec)
			if rankedReplicas("resched", slot, []string{"r0", "r1", "r2"})[2] == "r0" && (sec+1)%3 == 0 {
				raced++ // r0's fallback and r1's next slot, a second apart at most
			}
		}
		require.Positive(t, raced, "no old slot had its fallback near a new slot: pick other names")
		started := rec.all()
		slices.SortFunc(started, func(a, b record) int { return a.Start.Compare(b.Start) })
		for i := 1; i < len(started); i++ {
			a, b := started[i-1], started[i]
			require.True(t, b.Start.After(a.Start), "slots %s and %s started at the same instant, their claims racing",
				slotString(a.Run.Slot), slotString(b.Run.Slot))
			require.Greater(t, b.Run.FencingToken, a.Run.FencingToken,
				"slot %s started after slot %s with a lower token", slotString(b.Run.Slot), slotString(a.Run.Slot))
		}
	})
}

// A checked slot (a later candidate's or a fallback's, seen not handled)
// that waits in admission for its turn is read again just before its
// claim: handled by then, it is not attempted; not handled, it is. A
// first candidate's slot is attempted after its wait without a read.
func TestQueuedCheckedSlotIsReadAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		log := &claimLog{}
		eng := testEngine(t, Config{Replica: "r0", Locker: &claimCounter{Locker: e.locker, name: "r0", log: log},
			Jobs: []JobSpec{everySecond(t, "tick", &recorder{now: time.Now})}})
		got := &fakeAdmitted{} // admission_test.go
		ad := newAdmissionOf(eng, got)
		j := eng.jobList()[0]
		slot := time.Now().Truncate(time.Second)

		ad.mu.Lock()
		ad.sending = int(ad.limit) // every place taken: the slots wait
		ad.mu.Unlock()
		ad.fireChecked(j, slot)
		ad.fireChecked(j, slot.Add(time.Second))
		ad.fireSlot(j, slot.Add(2*time.Second))
		synctest.Wait()
		require.Empty(t, got.started, "a slot started while every place was taken")

		// Another replica runs the first slot and ends it handled.
		ctx := context.Background()
		other, err := e.locker.Claim(ctx, history.SlotKey("tick", slot), time.Minute)
		require.NoError(t, err)
		require.NoError(t, other.End(ctx, locking.Ending{DoneTTL: time.Minute, Note: "succeeded"}).Err)

		ad.mu.Lock()
		ad.sending = 1
		ad.mu.Unlock()
		ad.admitDone(0, admitUnsent) // room for all three
		synctest.Wait()
		got.mu.Lock()
		defer got.mu.Unlock()
		require.ElementsMatch(t, []time.Time{slot.Add(time.Second), slot.Add(2 * time.Second)}, got.started,
			"want the two slots not handled attempted (the read again comes first), not the handled one")
		log.mu.Lock()
		defer log.mu.Unlock()
		require.Equal(t, 2, log.handled, "one read again for each checked slot that waited, none for the first candidate's")
	})
}

// A checked slot that admission sheds (its answer would come too late) is
// dropped without the attempt's exit — no slot.skipped line: its first
// candidate decides it — unless its job's misfire policy recovers slots;
// a first candidate's slot shed goes through the exit.
func TestShedCheckedSlotIsDroppedQuietly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		skip := everySecond(t, "skip", &recorder{now: time.Now})
		once := everySecond(t, "once", &recorder{now: time.Now})
		once.Misfire = Misfire{Policy: MisfireRunOnce, Deadline: time.Minute}
		eng := testEngine(t, Config{Replica: "r0", Locker: e.locker, Jobs: []JobSpec{skip, once}})
		got := &fakeAdmitted{}
		ad := newAdmissionOf(eng, got)
		jobs := map[string]*job{}
		for _, j := range eng.jobList() {
			jobs[j.name()] = j
		}
		old := time.Now().Truncate(time.Second).Add(-time.Minute) // long past its freshness: shed on entry
		ad.fireChecked(jobs["skip"], old)
		ad.fireChecked(jobs["once"], old.Add(time.Second))
		ad.fireSlot(jobs["skip"], old.Add(2*time.Second))
		synctest.Wait()
		got.mu.Lock()
		defer got.mu.Unlock()
		require.Empty(t, got.started, "a slot past its freshness was attempted")
		require.ElementsMatch(t, []time.Time{old.Add(time.Second), old.Add(2 * time.Second)}, got.dropped,
			"want the run_once job's checked slot and the first candidate's slot shed through the exit, the skip job's checked slot dropped")
	})
}
