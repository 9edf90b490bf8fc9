package scheduler

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/require"
)

// Open, a finished worker parks and takes the next piece of work (no new
// goroutine); past maxIdleWorkers the others end; closed, every parked
// worker ends. Closed or never opened, each piece of work has its own
// goroutine, which ends with it. (synctest: a worker left blocked at the
// bubble's end fails the test.)
func TestWorkersAreReusedAndEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var p workerPool
		var ran atomic.Int32
		p.run(func() { ran.Add(1) })
		synctest.Wait()
		require.Equal(t, int32(1), ran.Load())
		require.Empty(t, p.idle, "a worker parked in a pool never opened")

		p.open()
		p.run(func() { ran.Add(1) })
		synctest.Wait()
		require.Len(t, p.idle, 1, "a finished worker parks")
		parked := p.idle[0]
		p.run(func() { ran.Add(1) })
		synctest.Wait()
		require.Equal(t, int32(3), ran.Load())
		require.Len(t, p.idle, 1, "the parked worker took the work: no second one")
		require.Equal(t, parked, p.idle[0])

		// A burst: maxIdleWorkers + 10 pieces of work at once.
		release := make(chan struct{})
		var started sync.WaitGroup
		for range maxIdleWorkers + 10 {
			started.Add(1)
			p.run(func() { started.Done(); <-release; ran.Add(1) })
		}
		started.Wait()
		close(release)
		synctest.Wait()
		require.Equal(t, int32(3+maxIdleWorkers+10), ran.Load())
		require.Len(t, p.idle, maxIdleWorkers, "past the bound, finished workers end")

		p.close(true)
		require.Empty(t, p.idle)
		p.run(func() { ran.Add(1) })
		synctest.Wait()
		require.Equal(t, int32(4+maxIdleWorkers+10), ran.Load())
		require.Empty(t, p.idle, "a worker parked in a closed pool")
	})
}

// Work handed to a parked worker just as the pool closes is still done:
// the worker finds both the work and the close when it reaches its wait,
// and takes the work.
func TestWorkersDoWorkHandedBeforeTheClose(t *testing.T) {
	for range 100 {
		ch := make(chan func(), 1)
		stop := make(chan struct{})
		ch <- func() {}
		close(stop)
		f, ok := next(ch, stop)
		require.True(t, ok, "work handed over before the close was dropped")
		require.NotNil(t, f)
		_, ok = next(ch, stop)
		require.False(t, ok, "a closed pool's worker waits on")
	}
}
