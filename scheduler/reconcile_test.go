package scheduler

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// frozenWriter wraps a Locker: the first AppendLog of a missed slot's
// entry blocks until thaw, as in a replica frozen (SIGSTOP, a VM paused)
// between deciding a verdict and writing it. The write then goes out as
// it was made: the frozen process never saw its deadline pass.
type frozenWriter struct {
	locking.Locker
	once   sync.Once
	frozen chan struct{} // closed when the write is held
	thawed chan struct{} // closed by thaw
}

func newFrozenWriter(l locking.Locker) *frozenWriter {
	return &frozenWriter{Locker: l, frozen: make(chan struct{}), thawed: make(chan struct{})}
}

func (f *frozenWriter) AppendLog(ctx context.Context, family string, a locking.LogAppend) error {
	if strings.Contains(a.Entry.Value, `"outcome":"`+OutcomeMissed+`"`) {
		f.once.Do(func() {
			close(f.frozen)
			<-f.thawed
			ctx = context.WithoutCancel(ctx)
		})
	}
	return f.Locker.AppendLog(ctx, family, a)
}

func (f *frozenWriter) thaw() { close(f.thawed) }

// reconcilerSpec is a replica's Config for the reconciler tests: passes
// every second, judging slots a few seconds old.
func (e *env) reconcilerScheduler(replica string, l locking.Locker, specs ...JobSpec) *Scheduler {
	e.t.Helper()
	s, err := New(Config{Replica: replica, Locker: l, Logger: e.sink.logger(replica), Metrics: e.metrics,
		LockTTL: 30 * time.Second, MaxClockSkew: 2 * time.Second, ShutdownGrace: 5 * time.Second,
		Beat: time.Second, ReconcileEvery: time.Second, ReconcileAfter: time.Second, DefinitionsHash: "defs",
		Jobs: specs})
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// TestReconcilerFrozenPastItsLeaseReportsOnce: a reconciler decides that a
// slot was missed and freezes before writing the verdict; its lease runs
// out, a second replica's reconciler judges the slot, writes and reports
// it; the first one wakes and its write goes out. The slot is reported
// missed once, and has one history entry.
func TestReconcilerFrozenPastItsLeaseReportsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		ctx := context.Background()
		slot := bubbleStart.Add(10 * time.Second)
		// The slot's done marker without an entry (a replica that closed it
		// and died before anything else): nobody runs it, nobody records it.
		ghost, err := e.locker.Claim(ctx, slotKey("yearly", slot), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := ghost.MarkDone(ctx, time.Hour, "ghost"); err != nil {
			t.Fatal(err)
		}
		spec := cronSpec(t, "yearly", "10 0 0 1 1 *", &recorder{now: time.Now})
		frozen := newFrozenWriter(e.locker)
		stop1 := running(t, e.reconcilerScheduler("r1", frozen, spec))
		<-frozen.frozen // r1 decided "missed" and froze before writing it
		stop2 := running(t, e.reconcilerScheduler("r2", e.locker, spec))
		time.Sleep(5 * time.Second) // r1's lease (1s) ran out; r2 judged the slot
		frozen.thaw()
		time.Sleep(3 * time.Second)
		stop1()
		stop2()

		evs := e.sink.events(t)
		missed := where(evs, "slot.missed", "slot", slotString(slot))
		if len(missed) != 1 {
			e.sink.dump(t)
			t.Fatalf("slot reported missed %d times, want once: %v", len(missed), missed)
		}
		if by := missed[0].str("replica"); by != "r2" {
			t.Errorf("reported by %s, want r2 (r1 froze before writing)", by)
		}
		if n := e.metrics.get("yearly/missed/"+MissedUnknown, true); n != 1 {
			t.Errorf("slotlock_slots_missed_total counted %d, want 1", n)
		}
		hist, err := ReadHistory(ctx, e.locker, "yearly", bubbleStart, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(hist) != 1 || hist[0].Outcome != OutcomeMissed {
			t.Errorf("history %+v, want one missed entry", hist)
		}
	})
}
