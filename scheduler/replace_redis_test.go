package scheduler

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redistest"
	"github.com/slotlock/slotlock/locking/redlock"
	"github.com/slotlock/slotlock/scheduler/history"
)

// Overlap replace across replicas, over three real redis-server nodes.
// The replicas' clocks are 0.8 s apart (within max_clock_skew, 2 s), and
// they start when the test says, so that the replica that wins a slot is
// known: the one whose clock is furthest ahead among those running.

// startReplaceReplica starts a scheduler named name over nodes, its clock
// off from the real one, running specs; the test's cleanup stops it.
func startReplaceReplica(t *testing.T, nodes *redistest.Cluster, sink *logSink, name string, off time.Duration, specs ...JobSpec) *replica {
	t.Helper()
	clock := locking.SystemClock(off)
	l, err := redlock.New(redlock.Config{Nodes: nodes.Addrs()},
		locking.Options{Replica: name, Clock: clock, Logger: sink.logger(name)})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Replica: name, Locker: l, Clock: clock, Logger: sink.logger(name),
		MaxClockSkew: itSkew, LockTTL: 10 * time.Second, ShutdownGrace: time.Second, Jobs: specs,
		// Every replica a candidate: the test picks the winner of each
		// slot by its clock (the one ahead tries first).
		Candidates: -1})
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{name: name, sched: s, locker: l, stop: running(t, s)}
	t.Cleanup(func() {
		r.stop()
		_ = l.Close()
	})
	return r
}

func replaceJobSpec(t *testing.T, name, spec string, l *ledger) JobSpec {
	t.Helper()
	sched, err := ParseSchedule(spec, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	return JobSpec{Name: name, Spec: spec, Schedule: sched, Job: l, Overlap: OverlapReplace}
}

// TestRedisReplaceAcrossReplicas: a job whose runs would take a minute,
// every 4 s, overlap replace. The replica whose clock is 0.8 s behind
// starts alone and runs a slot; then the others start, and the one 0.8 s
// ahead wins the next slot: the first run is canceled on its replica by
// that slot won on another one, and so on, each run replaced by the next
// slot (on the same replica from then on). Every slot runs once; each run
// is canceled with cause ErrReplaced naming the next slot, within a second
// of that slot; the next run starts after it ended, with a higher token;
// run.canceled says reason replaced with by_slot, and the history says
// canceled/replaced with by_slot.
func TestRedisReplaceAcrossReplicas(t *testing.T) {
	nodes, sink := realTimeNodes(t)
	job := &ledger{d: time.Minute}
	spec := func() JobSpec { return replaceJobSpec(t, "repl", "*/4 * * * * *", job) }
	behind := startReplaceReplica(t, nodes, sink, "behind", -itSkew*4/10, spec())
	deadline := time.Now().Add(12 * time.Second)
	for len(where(sink.events(t), "run.started")) == 0 {
		if time.Now().After(deadline) {
			sink.dump(t)
			t.Fatal("no run started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	ahead := startReplaceReplica(t, nodes, sink, "ahead", itSkew*4/10, spec())
	mid := startReplaceReplica(t, nodes, sink, "mid", 0, spec())
	time.Sleep(13 * time.Second)
	var wg sync.WaitGroup
	for _, r := range []*replica{ahead, mid, behind} {
		wg.Go(r.stop)
	}
	wg.Wait()

	runs := job.all()
	slices.SortFunc(runs, func(a, b record) int { return a.Start.Compare(b.Start) })
	if len(runs) < 4 {
		sink.dump(t)
		t.Fatalf("%d runs, want at least 4", len(runs))
	}
	if runs[0].Run.Replica != "behind" || runs[1].Run.Replica != "ahead" {
		t.Fatalf("first runs on %s then %s, want behind then ahead", runs[0].Run.Replica, runs[1].Run.Replica)
	}
	evs := sink.events(t)
	h, err := history.ReadEntries(context.Background(), behind.locker, "repl", time.Time{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	hist := map[string]history.Entry{}
	for _, e := range h {
		hist[e.Slot] = e
	}
	for i := 0; i+1 < len(runs); i++ {
		old, next := runs[i], runs[i+1]
		slot, by := slotString(old.Run.Slot), slotString(next.Run.Slot)
		if !next.Run.Slot.Equal(old.Run.Slot.Add(4 * time.Second)) {
			t.Errorf("slot %s ran after slot %s: every slot must run, in order", by, slot)
		}
		var re *ReplacedError
		if !errors.As(old.Err, &re) || !re.By.Equal(next.Run.Slot) {
			t.Errorf("run of %s on %s ended with %v, want replaced by %s", slot, old.Run.Replica, old.Err, by)
		}
		if old.End.After(next.Run.Slot.Add(time.Second)) {
			t.Errorf("run of %s ended at %s, more than 1s after slot %s", slot, old.End.Format(time.RFC3339Nano), by)
		}
		if next.Start.Before(old.End) {
			t.Errorf("run of %s started at %s, before the run of %s ended at %s", by,
				next.Start.Format(time.RFC3339Nano), slot, old.End.Format(time.RFC3339Nano))
		}
		if gap := next.Start.Sub(old.End); gap > time.Second {
			t.Errorf("run of %s started %v after the run it replaced ended", by, gap)
		}
		if next.Run.FencingToken <= old.Run.FencingToken {
			t.Errorf("tokens %d (%s) then %d (%s)", old.Run.FencingToken, slot, next.Run.FencingToken, by)
		}
		t.Logf("%s on %s replaced by %s on %s: ended %v after that slot, which started %v later (tokens %d, %d)",
			slot, old.Run.Replica, by, next.Run.Replica, old.End.Sub(next.Run.Slot).Round(time.Millisecond),
			next.Start.Sub(old.End).Round(time.Millisecond), old.Run.FencingToken, next.Run.FencingToken)
		c := where(evs, "run.canceled", "run_id", old.Run.RunID)
		if len(c) != 1 || c[0].str("reason") != "replaced" || c[0].str("by_slot") != by ||
			c[0].str("replica") != old.Run.Replica || c[0].str("slot") != slot {
			t.Errorf("run.canceled of %s: %v, want reason replaced, by_slot %s", slot, c, by)
		}
		if e := hist[slot]; e.Outcome != history.OutcomeCanceled || e.Reason != "replaced" || e.BySlot != by ||
			e.Replica != old.Run.Replica || e.Token != old.Run.FencingToken {
			t.Errorf("history of %s: %+v, want canceled/replaced by %s on %s", slot, e, by, old.Run.Replica)
		}
	}
	for sl, k := range perSlot(runs) {
		if k > 1 {
			t.Errorf("slot %s ran %d times", slotString(time.Unix(sl, 0)), k)
		}
	}
	for _, reason := range []string{"overlap", "replaced", "no_quorum"} {
		if s := where(evs, "slot.skipped", "reason", reason); len(s) != 0 {
			t.Errorf("slot.skipped reason %s: %v", reason, s)
		}
	}
	if t.Failed() {
		sink.dump(t)
	}
}

// TestRedisReplaceDeadHolder: the job lease is held by a replica that died
// (a lease nobody renews, and nobody to read the request): the slot that
// fires meanwhile, on whichever replica wins it, starts once the lease has
// expired — not before — with a higher token, and nothing is canceled.
func TestRedisReplaceDeadHolder(t *testing.T) {
	nodes, sink := realTimeNodes(t)
	job := &ledger{d: 200 * time.Millisecond}
	for i, off := range []time.Duration{-itSkew * 4 / 10, 0, itSkew * 4 / 10} {
		startReplaceReplica(t, nodes, sink, []string{"behind", "mid", "ahead"}[i], off,
			replaceJobSpec(t, "orphaned", "*/10 * * * * *", job))
	}
	dead, err := redlock.New(redlock.Config{Nodes: nodes.Addrs()},
		locking.Options{Replica: "dead", Logger: sink.logger("dead")})
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	// The dead run's lease: taken 3 s before slot B, for 5 s.
	slotB := time.Now().Truncate(10 * time.Second).Add(10 * time.Second)
	if time.Until(slotB) < 5*time.Second {
		slotB = slotB.Add(10 * time.Second)
	}
	time.Sleep(time.Until(slotB.Add(-3 * time.Second)))
	before := time.Now()
	lease, err := dead.Acquire(context.Background(), history.RunKey("orphaned"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now()
	time.Sleep(time.Until(slotB.Add(5 * time.Second)))

	var got []record
	for _, r := range job.all() {
		if r.Run.Slot.Equal(slotB) {
			got = append(got, r)
		}
	}
	if len(got) != 1 {
		sink.dump(t)
		t.Fatalf("slot %s ran %d times, want once", slotString(slotB), len(got))
	}
	r := got[0]
	if r.Start.Before(before.Add(5 * time.Second)) {
		t.Errorf("slot %s started at %s, before the dead holder's lease expired (%s at the earliest)", slotString(slotB),
			r.Start.Format(time.RFC3339Nano), before.Add(5*time.Second).Format(time.RFC3339Nano))
	}
	if late := r.Start.Sub(after.Add(5 * time.Second)); late > time.Second {
		t.Errorf("slot %s started %v after the dead holder's lease expired", slotString(slotB), late)
	}
	if r.Run.FencingToken <= lease.Token() {
		t.Errorf("token %d, not above the dead run's %d", r.Run.FencingToken, lease.Token())
	}
	evs := sink.events(t)
	if c := where(evs, "run.canceled"); len(c) != 0 {
		t.Errorf("run.canceled: %v", c)
	}
	for _, reason := range []string{"overlap", "replaced"} {
		if s := where(evs, "slot.skipped", "slot", slotString(slotB), "reason", reason); len(s) != 0 {
			t.Errorf("slot.skipped reason %s: %v", reason, s)
		}
	}
	if t.Failed() {
		sink.dump(t)
	}
}
