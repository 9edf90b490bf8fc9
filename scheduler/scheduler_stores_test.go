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

// What the scheduler asks of the stores beside the slots: the record
// writes' lag, the fitness the health check reports.

// TestRecordLagBounded: the job's last-slot record is written lazily but
// never lags the latest handled slot by doneTTL/2 or more, and is exact
// after a clean stop.
func TestRecordLagBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		f := &countingRecords{Store: locksim.NewStore("s0")}
		l, err := redlock.OnNodes([]driver.Node{f}, "", 0, locking.Options{Replica: "local"})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		e.locker = l
		rec := &recorder{now: time.Now}
		s := e.scheduler("r1", nil, everySecond(t, "job", rec))
		stop := running(t, s)
		time.Sleep(500 * time.Millisecond)
		for range 60 {
			time.Sleep(time.Second) // at n.5s, slot n has run
			r, _ := e.locker.ReadRecord(context.Background(), history.LastKey("job"))
			latest := time.Now().Truncate(time.Second).Unix()
			if lag := time.Duration(latest-r) * time.Second; r == 0 || lag >= s.DoneTTL()/2 {
				t.Errorf("at %v the record lags %v", time.Since(bubbleStart), lag)
				break
			}
		}
		stop()
		if r, _ := e.locker.ReadRecord(context.Background(), history.LastKey("job")); r != bubbleStart.Unix()+60 {
			t.Errorf("record after stop %d", r-bubbleStart.Unix())
		}
		if n := f.writes.Load(); n > 12 {
			t.Errorf("%d record writes for 60 slots, want about one per doneTTL/4", n)
		}
	})
}

// countingRecords is a lock store node that counts the record writes it
// is asked for: alone (Store.AdvanceRecord) or with a lease's end
// (Ending.Record).
type countingRecords struct {
	*locksim.Store
	writes atomic.Int32
}

func (c *countingRecords) Addr() string { return c.Name() }

func (c *countingRecords) Close() error { return nil }

func (c *countingRecords) Do(_ context.Context, op driver.Op) (driver.Result, error) {
	switch o := op.(type) {
	case driver.MaxSetOp:
		c.writes.Add(1)
	case driver.ReleaseOp:
		if o.RecordN != 0 {
			c.writes.Add(1)
		}
	}
	return c.Apply(op)
}

// A running scheduler whose Config.Fit refuses is not healthy, with Fit's
// reason, and is again once Fit is content.
func TestHealthyAsksFit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		var unfit atomic.Bool
		blocked := errors.New("log output blocked for 2s")
		s, err := New(Config{
			Replica: "r1", Locker: e.locker, Logger: e.sink.logger("r1"), LockTTL: 30 * time.Second,
			Fit: func() error {
				if unfit.Load() {
					return blocked
				}
				return nil
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		stop := running(t, s)
		defer stop()
		time.Sleep(2 * time.Second)
		if err := s.Healthy(); err != nil {
			t.Fatalf("Healthy while fit: %v", err)
		}
		unfit.Store(true)
		if err := s.Healthy(); !errors.Is(err, blocked) {
			t.Fatalf("Healthy while unfit = %v, want Fit's error", err)
		}
		unfit.Store(false)
		if err := s.Healthy(); err != nil {
			t.Fatalf("Healthy once fit again: %v", err)
		}
	})
}
