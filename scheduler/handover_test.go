package scheduler

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// A forbid job's slot is won while another run still holds the job lease,
// and shutdown begins during the hand-over wait: the slot must still run
// here within the grace once the lease is free — it used to be marked done
// as "overlap", with nothing run anywhere (issue #10, hole 3).
func TestShutdownDuringHandOverStillRunsTheSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{now: time.Now}
		s := e.scheduler("r1", nil, everySecond(t, "job", rec))
		// Another replica's run of the job, ending 300ms after slot 1.
		other, err := e.locker.Acquire(context.Background(), history.RunKey("job"), 30*time.Second)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		time.Sleep(time.Second + 100*time.Millisecond) // slot 1 won, waiting for the job lease
		cancel()                                       // SIGTERM
		time.Sleep(200 * time.Millisecond)
		require.NoError(t, other.End(context.Background(), locking.Ending{}).Err)
		require.NoError(t, <-done)

		runs := rec.all()
		require.Len(t, runs, 1, "slot 1 must run once, within the grace")
		require.Equal(t, bubbleStart.Add(time.Second), runs[0].Run.Slot)
		require.Empty(t, where(e.sink.events(t), "slot.skipped", "reason", "overlap"))
	})
}

// The grace ends before the job lease is free: the slot is handed back
// unmarked (another replica still fresh may take it), and the skip says
// why — not "overlap".
func TestShutdownGraceEndsDuringHandOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		s, err := New(Config{Replica: "r1", Locker: e.locker, Logger: e.sink.logger("r1"),
			LockTTL: 30 * time.Second, ShutdownGrace: 100 * time.Millisecond,
			Jobs: []JobSpec{everySecond(t, "job", &recorder{now: time.Now})}})
		require.NoError(t, err)
		other, err := e.locker.Acquire(context.Background(), history.RunKey("job"), 30*time.Second)
		require.NoError(t, err)
		stop := running(t, s)
		time.Sleep(time.Second + 100*time.Millisecond)
		stop()
		skips := where(e.sink.events(t), "slot.skipped", "slot", slotAt(1))
		require.Len(t, skips, 1)
		require.Equal(t, "shutdown", skips[0].str("reason"))
		// No done marker: the slot can still be claimed.
		l, err := e.locker.Claim(context.Background(), history.SlotKey("job", bubbleStart.Add(time.Second)), time.Second)
		require.NoError(t, err)
		require.NoError(t, l.End(context.Background(), locking.Ending{}).Err)
		require.NoError(t, other.End(context.Background(), locking.Ending{}).Err)
	})
}

// An acquisition that used up its validity is skipped with its own
// reason, on the slot and on the job-lease path — not as no_quorum, and
// not as overlap with the slot marked done (issue #10, hole 5).
func TestSlowAcquireHasItsOwnReason(t *testing.T) {
	for _, onJobLease := range []bool{false, true} {
		t.Run(map[bool]string{false: "slot", true: "job lease"}[onJobLease], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t)
				slow := newSlowLocker(e.locker, onJobLease)
				e.locker = slow
				rec := &recorder{now: time.Now}
				stop := running(t, e.scheduler("r1", nil, everySecond(t, "job", rec)))
				time.Sleep(5 * time.Second) // slot 1 is retried while fresh (3s), then skipped
				stop()
				skips := where(e.sink.events(t), "slot.skipped", "slot", slotAt(1))
				require.Len(t, skips, 1, "%v", skips)
				require.Equal(t, "slow_lock", skips[0].str("reason"))
				require.Empty(t, rec.all())
				// Not marked done: nothing ran.
				l, err := slow.Locker.Claim(context.Background(), history.SlotKey("job", bubbleStart.Add(time.Second)), time.Second)
				require.NoError(t, err)
				require.NoError(t, l.End(context.Background(), locking.Ending{}).Err)
			})
		})
	}
}

// slowLocker takes the slot (or the job lease) through a locker whose
// clock leaps a minute at every reading, so that each acquisition finds its
// validity used up: the real locking.ErrSlowAcquire.
type slowLocker struct {
	locking.Locker
	jobLease bool
	leaping  locking.Locker
}

func newSlowLocker(inner locking.Locker, jobLease bool) *slowLocker {
	return &slowLocker{Locker: inner, jobLease: jobLease,
		leaping: locking.NewLocal(locking.Options{Replica: "r1", Clock: &leapClock{}})}
}

// Claim takes the slot on the leaping locker; with jobLease, on the inner
// one but without the job lease (locking.With), as when the job lease was
// held at the claim: the scheduler then takes it by its own Acquire.
func (l *slowLocker) Claim(ctx context.Context, key locking.Key, ttl time.Duration, opts ...locking.ClaimOption) (*locking.Lease, error) {
	if !l.jobLease {
		return l.leaping.Claim(ctx, key, ttl, opts...)
	}
	return l.Locker.Claim(ctx, key, ttl)
}

func (l *slowLocker) Acquire(ctx context.Context, key locking.Key, ttl time.Duration) (*locking.Lease, error) {
	if l.jobLease && key == history.RunKey(key.Family) {
		return l.leaping.Acquire(ctx, key, ttl)
	}
	return l.Locker.Acquire(ctx, key, ttl)
}

// leapClock is a clock that moves a minute forward at every reading.
type leapClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *leapClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.t.IsZero() {
		c.t = time.Now()
	}
	c.t = c.t.Add(time.Minute)
	return c.t
}

func (c *leapClock) NewTimer(d time.Duration) locking.Timer {
	return locking.SystemClock(0).NewTimer(d)
}
