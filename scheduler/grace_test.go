package scheduler

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/locksim"
	"github.com/slotlock/slotlock/locking/redlock"
)

// graceJob runs until canceled, then goes on for its grace, as an exec
// job's TERM-ignoring process does until SIGKILL.
type graceJob struct {
	grace time.Duration
	mu    sync.Mutex
	spans []graceSpan
}

type graceSpan struct {
	replica    string
	start, end time.Time
	cause      error
}

func (g *graceJob) Run(ctx context.Context, run jobs.Run) error {
	start := time.Now()
	<-ctx.Done()
	time.Sleep(g.grace)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.spans = append(g.spans, graceSpan{replica: run.Replica, start: start, end: time.Now(), cause: context.Cause(ctx)})
	return context.Cause(ctx)
}

func (g *graceJob) StopGrace() (time.Duration, bool)       { return g.grace, true }
func (g *graceJob) WithStopGrace(d time.Duration) jobs.Job { return &graceJob{grace: d} }

func (g *graceJob) all() []graceSpan {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]graceSpan(nil), g.spans...)
}

// The lost-lease path of a job that outlives its cancel by a grace (exec's
// kill_grace): the replica holding the run is cut from a majority of the
// stores, so its renewals fail; another replica takes the job once the
// lease expires. The holder's run must have ended — grace included —
// before the next run starts: the run is canceled a grace before its
// lease's validity ends, not at its end.
func TestGraceEndsBeforeTheLeaseExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := locksim.NewNet(1, locksim.NewStore("s0"), locksim.NewStore("s1"), locksim.NewStore("s2"))
		job := &graceJob{grace: 2 * time.Second}
		sink := &logSink{}
		start := func(name string) func() {
			gate := locksim.NewGate(1)
			l, err := redlock.OnNodes(net.Nodes(name, gate), "g", 100*time.Millisecond,
				locking.Options{Replica: name, Logger: sink.logger(name)})
			require.NoError(t, err)
			s, err := New(Config{Replica: name, Locker: l, Logger: sink.logger(name), LockTTL: 6 * time.Second,
				MaxClockSkew: 500 * time.Millisecond, ShutdownGrace: 10 * time.Second, Jobs: []JobSpec{everySecond(t, "long", job)}})
			require.NoError(t, err)
			stop := running(t, s)
			return func() { stop(); _ = l.Close() }
		}
		stop1 := start("r1")
		time.Sleep(3 * time.Second) // r1 runs the job, renewing its lease
		net.SetCut("r1", 0, true)
		net.SetCut("r1", 1, true)
		stop2 := start("r2")
		time.Sleep(20 * time.Second)
		stop2()
		stop1()

		spans := job.all()
		var first, next *graceSpan
		for i := range spans {
			switch spans[i].replica {
			case "r1":
				first = &spans[i]
			case "r2":
				if next == nil || spans[i].start.Before(next.start) {
					next = &spans[i]
				}
			}
		}
		require.NotNil(t, first, "r1's run ended: %+v", spans)
		require.ErrorIs(t, first.cause, locking.ErrLockLost)
		require.NotNil(t, next, "r2 ran the job after r1's lease expired: %+v", spans)
		require.False(t, first.end.After(next.start),
			"r1's run went on until %s, past the start of r2's run at %s", first.end.Format("15:04:05.000"), next.start.Format("15:04:05.000"))
	})
}
