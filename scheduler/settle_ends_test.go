package scheduler

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/locksim"
	"github.com/slotlock/slotlock/locking/redlock"
	"github.com/slotlock/slotlock/scheduler/history"
)

// settleEndLost is a node whose first settler's end (a ReleaseOp of a
// lease that took a claim over) is lost on its way: not applied, no answer.
type settleEndLost struct {
	driver.Node
	lose atomic.Int32
}

func (n *settleEndLost) Do(ctx context.Context, op driver.Op) (driver.Result, error) {
	if r, ok := op.(driver.ReleaseOp); ok && r.Taken && n.lose.Add(-1) >= 0 {
		return driver.Result{}, errors.New("settler's end lost")
	}
	return n.Node.Do(ctx, op)
}

// oneShot is a scheduler that is never Run — a `slotlock backfill` or
// `trigger` process — on the three simulated stores of net, whose first
// lost settler's ends miss the stores lose.
func oneShot(t *testing.T, net *locksim.Net, sink *logSink, name string, lost int32, lose ...int) (*Scheduler, locking.Locker) {
	t.Helper()
	nodes := net.Nodes(name, locksim.NewGate(1))
	for _, i := range lose {
		n := &settleEndLost{Node: nodes[i]}
		n.lose.Store(lost)
		nodes[i] = n
	}
	l, err := redlock.OnNodes(nodes, "os", 100*time.Millisecond, locking.Options{Replica: name, Logger: sink.logger(name)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	s, err := New(Config{Replica: name, Locker: l, Logger: sink.logger(name), HistoryKeep: 50, LockTTL: 2 * time.Second,
		MaxClockSkew: time.Second, ReconcileAfter: time.Second, Jobs: []JobSpec{everySecond(t, "bf", &recorder{now: time.Now})}})
	if err != nil {
		t.Fatal(err)
	}
	return s, l
}

// TestOneShotSettlerFinishesItsEnd: a backfill process settles, after its
// own slot, the started claim a killed backfill left (Grant.Orphan), and
// its end reaches one store of the two needed. The process has no outage
// probe to end it again later, and a later settler that finds the entry on
// that store closes the claim as already recorded — so the dead run would
// be reported nowhere. The process finishes its end before RunSlot
// returns: run.abandoned is logged once, by it, and the entry stands on a
// majority.
func TestOneShotSettlerFinishesItsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := locksim.NewNet(1, locksim.NewStore("s0"), locksim.NewStore("s1"), locksim.NewStore("s2"))
		sink := &logSink{}
		ctx := context.Background()
		time.Sleep(time.Minute)
		first := time.Now().Add(-40 * time.Second).Truncate(time.Second)

		// The killed backfill: its claim of the first slot, confirmed
		// started, never ended.
		_, dead := oneShot(t, net, sink, "backfill-1", 0)
		lease, err := dead.Claim(ctx, history.SlotKey("bf", first), 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		lease.Start()
		if err := lease.Extend(ctx); err != nil {
			t.Fatal(err)
		}
		runID := lease.Grant().ID
		time.Sleep(5 * time.Second) // its lease expires

		settler, _ := oneShot(t, net, sink, "backfill-2", 1, 1, 2)
		if _, err := settler.RunSlot(ctx, "bf", first.Add(10*time.Second)); err != nil {
			t.Fatal(err)
		}
		// A later process, pointed to whatever claim is left once the
		// settler's lease expired, settles it.
		time.Sleep(5 * time.Second)
		later, _ := oneShot(t, net, sink, "backfill-3", 0)
		if _, err := later.RunSlot(ctx, "bf", first.Add(20*time.Second)); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()

		evs := sink.events(t)
		reports := where(evs, evRunAbandoned, "slot", slotString(first), "run_id", runID)
		if len(reports) != 1 || reports[0].str("replica") != "backfill-2" {
			sink.dump(t)
			t.Fatalf("run.abandoned lines of the dead run: %v, want one, by its settler backfill-2", reports)
		}
		for i := range net.Stores() {
			if !storeHoldsEntry(t, net, i, first, runID) {
				t.Errorf("store %d holds no entry of the dead run %s: the settler's end does not stand on every store", i, runID)
			}
		}
	})
}

// storeHoldsEntry reports whether store i of net alone holds a history
// entry of slot t naming run.
func storeHoldsEntry(t *testing.T, net *locksim.Net, i int, slot time.Time, run string) bool {
	t.Helper()
	one, err := redlock.OnNodes(net.Nodes("reader", locksim.NewGate(1))[i:i+1], "os", 100*time.Millisecond, locking.Options{Replica: "reader"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = one.Close() }()
	log, err := one.ReadLog(context.Background(), "bf", slot.Unix(), 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, le := range log {
		if e, ok := history.ParseEntry(le); ok && le.Score == slot.Unix() && e.RunID == run {
			return true
		}
	}
	return false
}

// TestSettledClaimLeftOnAMinorityIsNotReportedAgain: a settler's end
// reaches two stores of three — it reports the dead run — and the third
// keeps the dead claim. Once the settler's markers expired, a later
// process is pointed to that claim and takes it over on one store
// (Abandoned.Majority false): the history's entry of that settler is its
// report, so the claim is closed without a second run.abandoned.
func TestSettledClaimLeftOnAMinorityIsNotReportedAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := locksim.NewNet(1, locksim.NewStore("s0"), locksim.NewStore("s1"), locksim.NewStore("s2"))
		sink := &logSink{}
		ctx := context.Background()
		time.Sleep(time.Minute)
		first := time.Now().Add(-40 * time.Second).Truncate(time.Second)

		_, dead := oneShot(t, net, sink, "backfill-1", 0)
		lease, err := dead.Claim(ctx, history.SlotKey("bf", first), 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		lease.Start()
		if err := lease.Extend(ctx); err != nil {
			t.Fatal(err)
		}
		runID := lease.Grant().ID
		time.Sleep(5 * time.Second)

		settler, _ := oneShot(t, net, sink, "backfill-2", 1, 2)
		if _, err := settler.RunSlot(ctx, "bf", first.Add(10*time.Second)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Hour) // the settler's done markers expire; the claim stays on store 2
		later, _ := oneShot(t, net, sink, "backfill-3", 0)
		slot := time.Now().Add(-time.Minute).Truncate(time.Second)
		if _, err := later.RunSlot(ctx, "bf", slot); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()

		evs := sink.events(t)
		if n := len(where(evs, evMisfireCheck, "replica", "backfill-3", "run_id", runID)); n != 1 {
			sink.dump(t)
			t.Fatalf("%d lines of backfill-3 closing the dead run's claim, want 1: it was not pointed to the claim left on store 2", n)
		}
		reports := where(evs, evRunAbandoned, "slot", slotString(first), "run_id", runID)
		if len(reports) != 1 || reports[0].str("replica") != "backfill-2" {
			sink.dump(t)
			t.Fatalf("run.abandoned lines of the dead run: %v, want one, by its settler backfill-2", reports)
		}
	})
}

// TestSettlerEndOnAMinorityIsReportedByTheNext: a settler's end reaches
// one store of three, and its retries until its grace passed reach no
// more (the process then exits). The dead claim stands on the two others:
// the next process pointed to it takes it over on a majority
// (Abandoned.Majority), finds the settler's entry in the history, and
// reports the run — that settler never did, and its end can no longer
// land on a majority.
func TestSettlerEndOnAMinorityIsReportedByTheNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := locksim.NewNet(1, locksim.NewStore("s0"), locksim.NewStore("s1"), locksim.NewStore("s2"))
		sink := &logSink{}
		ctx := context.Background()
		time.Sleep(time.Minute)
		first := time.Now().Add(-40 * time.Second).Truncate(time.Second)

		_, dead := oneShot(t, net, sink, "backfill-1", 0)
		lease, err := dead.Claim(ctx, history.SlotKey("bf", first), 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		lease.Start()
		if err := lease.Extend(ctx); err != nil {
			t.Fatal(err)
		}
		runID := lease.Grant().ID
		time.Sleep(5 * time.Second)

		settler, _ := oneShot(t, net, sink, "backfill-2", 1<<30, 1, 2)
		if _, err := settler.RunSlot(ctx, "bf", first.Add(10*time.Second)); err != nil {
			t.Fatal(err)
		}
		if !storeHoldsEntry(t, net, 0, first, runID) {
			t.Fatal("the settler's entry is not on store 0")
		}
		later, _ := oneShot(t, net, sink, "backfill-3", 0)
		if _, err := later.RunSlot(ctx, "bf", first.Add(20*time.Second)); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()

		reports := where(sink.events(t), evRunAbandoned, "slot", slotString(first), "run_id", runID)
		if len(reports) != 1 || reports[0].str("replica") != "backfill-3" {
			sink.dump(t)
			t.Fatalf("run.abandoned lines of the dead run: %v, want one, by backfill-3", reports)
		}
		for i := range net.Stores() {
			if !storeHoldsEntry(t, net, i, first, runID) {
				t.Errorf("store %d holds no entry of the dead run", i)
			}
		}
	})
}
