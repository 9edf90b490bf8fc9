package locking

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/locking/driver"
)

// extendCounter counts the renewals that reach the driver.
type extendCounter struct {
	driver.Driver
	extends, started atomic.Int64
}

func (d *extendCounter) Extend(ctx context.Context, l driver.Lease, start bool) error {
	d.extends.Add(1)
	if start {
		d.started.Add(1)
	}
	return d.Driver.Extend(ctx, l, start)
}

func countingLocal() (*locker, *extendCounter) {
	opt := Options{Replica: "a"}.WithDefaults()
	d := &extendCounter{Driver: NewLocal(opt).(*locker).b}
	return newLocker(d, opt), d
}

// Runs that end before their first renewal is due — most runs: under a
// second — never start a watchdog: nothing is renewed, and with nothing
// left waiting the keeper's own goroutine ends too.
func TestKeeperShortRunsStartNoWatchdog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		l, d := countingLocal()
		for i := range 100 {
			lease, err := l.Claim(ctx, Key{Family: fmt.Sprint("job", i), Name: "slot:1"}, 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if err := lease.Start(); err != nil {
				t.Fatal(err)
			}
			lease.Keep(ctx)
			time.Sleep(5 * time.Millisecond)
			if err := lease.End(ctx, Ending{DoneTTL: time.Minute, Note: "succeeded"}).Err; err != nil {
				t.Fatal(err)
			}
		}
		if n := d.extends.Load(); n != 0 {
			t.Fatalf("%d renewals for runs of 5ms", n)
		}
		synctest.Wait()
		l.keeper.mu.Lock()
		running, waiting := l.keeper.running, len(l.keeper.pending)
		l.keeper.mu.Unlock()
		if running || waiting != 0 {
			t.Fatalf("keeper running %v with %d waiting after every lease ended; want neither", running, waiting)
		}
	})
}

// A claim's first renewal confirms its start within confirmAfter, whether
// Start comes before Keep (the scheduler's order) or after; the next one
// comes TTL/3 later. A plain lease's first renewal is at TTL/3.
func TestKeeperFirstRenewal(t *testing.T) {
	for _, order := range []string{"start, keep", "keep, start", "plain"} {
		t.Run(order, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				l, d := countingLocal()
				key := Key{Family: "job", Name: "slot:1"}
				var lease *Lease
				var err error
				if order == "plain" {
					lease, err = l.Acquire(ctx, key, 30*time.Second)
				} else {
					lease, err = l.Claim(ctx, key, 30*time.Second)
				}
				if err != nil {
					t.Fatal(err)
				}
				switch order {
				case "start, keep":
					_ = lease.Start()
					lease.Keep(ctx)
				case "keep, start":
					lease.Keep(ctx)
					time.Sleep(300 * time.Millisecond)
					_ = lease.Start()
				default:
					lease.Keep(ctx)
				}
				at := func(d time.Duration) { time.Sleep(d); synctest.Wait() }
				first := confirmAfter
				if order == "plain" {
					first = 10 * time.Second
				}
				at(first - 400*time.Millisecond)
				if n := d.extends.Load(); n != 0 {
					t.Fatalf("renewed %d times before the first renewal was due", n)
				}
				at(400 * time.Millisecond)
				if n := d.extends.Load(); n != 1 {
					t.Fatalf("%d renewals when the first was due, want 1", n)
				}
				if want := int64(1); order != "plain" && d.started.Load() != want {
					t.Fatalf("the first renewal did not confirm the start")
				}
				at(10 * time.Second)
				if n := d.extends.Load(); n != 2 {
					t.Fatalf("%d renewals TTL/3 after the first, want 2", n)
				}
				if err := lease.End(ctx, Ending{}).Err; err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}
