package scheduler

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// writtenLog is a Notifier that keeps what it is told, by replica.
type writtenLog struct {
	mu  sync.Mutex
	got []writtenBy
}

type writtenBy struct {
	replica string
	w       Written
}

type replicaNotifier struct {
	log     *writtenLog
	replica string
}

func (n replicaNotifier) Written(w Written) {
	n.log.mu.Lock()
	defer n.log.mu.Unlock()
	n.log.got = append(n.log.got, writtenBy{n.replica, w})
}

func (l *writtenLog) all() []writtenBy {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]writtenBy(nil), l.got...)
}

var notifyAll = []NotifyRule{{To: "t", On: []string{"failed", "missed", "abandoned", "recovered"}}}

// Two replicas run a job whose every slot fails: each slot's outcome is
// told to the Notifier once, by the replica that ran it, with the job's
// rules; a job without rules tells nothing.
func TestNotifierToldOncePerRunEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{now: time.Now}
		rec.fail.Store(1 << 20)
		spec := everySecond(t, "tick", rec)
		spec.Notify = notifyAll
		quiet := everySecond(t, "quiet", &recorder{now: time.Now})
		log := &writtenLog{}
		var stops []func()
		for _, r := range []string{"r1", "r2"} {
			s, err := New(Config{Replica: r, Locker: e.locker, Logger: e.sink.logger(r), Metrics: e.metrics,
				LockTTL: 30 * time.Second, MaxClockSkew: 2 * time.Second, ShutdownGrace: 5 * time.Second,
				Notifier: replicaNotifier{log, r}, Jobs: []JobSpec{spec, quiet}})
			if err != nil {
				t.Fatal(err)
			}
			stops = append(stops, running(t, s))
		}
		time.Sleep(5*time.Second + 500*time.Millisecond)
		for _, stop := range stops {
			stop()
		}
		rec.mu.Lock()
		runs := map[string]string{} // run id -> replica
		for _, r := range rec.runs {
			runs[r.Run.RunID] = r.Run.Replica
		}
		rec.mu.Unlock()
		told := map[string]int{}
		for _, g := range log.all() {
			if g.w.Job != "tick" || g.w.Entry.Outcome != history.OutcomeFailed || len(g.w.Rules) != 1 {
				t.Errorf("told %+v", g)
				continue
			}
			if runs[g.w.Entry.RunID] != g.replica {
				t.Errorf("run %s told by %s, ran on %s", g.w.Entry.RunID, g.replica, runs[g.w.Entry.RunID])
			}
			told[g.w.Entry.RunID]++
		}
		if len(runs) < 4 || len(told) != len(runs) {
			t.Errorf("%d runs, %d told", len(runs), len(told))
		}
		for id, n := range told {
			if n != 1 {
				t.Errorf("run %s told %d times", id, n)
			}
		}
	})
}

// The reconciler's missed entry is told once, by the pass whose write
// added it — not by a reconciler that froze before its write and wrote
// after (TestReconcilerFrozenPastItsLeaseReportsOnce's scenario).
func TestNotifierToldOncePerMissedSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		ctx := context.Background()
		slot := bubbleStart.Add(10 * time.Second)
		ghost, err := e.locker.Claim(ctx, history.SlotKey("yearly", slot), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if err := ghost.End(ctx, locking.Ending{DoneTTL: time.Hour, Note: "ghost"}).Err; err != nil {
			t.Fatal(err)
		}
		spec := cronSpec(t, "yearly", "10 0 0 1 1 *", &recorder{now: time.Now})
		spec.Notify = notifyAll
		log := &writtenLog{}
		start := func(r string, l locking.Locker) func() {
			s := e.reconciling(r, l, time.Second, spec)
			s.cfg.Notifier = replicaNotifier{log, r}
			return running(t, s)
		}
		frozen := newFrozenWriter(e.locker)
		stop1 := start("r1", frozen)
		<-frozen.frozen
		stop2 := start("r2", e.locker)
		time.Sleep(5 * time.Second)
		frozen.thaw()
		time.Sleep(3 * time.Second)
		stop1()
		stop2()
		got := log.all()
		if len(got) != 1 || got[0].replica != "r2" || got[0].w.Entry.Outcome != history.OutcomeMissed ||
			!got[0].w.Slot.Equal(slot) {
			t.Fatalf("told %+v, want the missed slot once, by r2", got)
		}
	})
}
