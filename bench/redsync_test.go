package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	rsgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redistest"
	"github.com/slotlock/slotlock/locking/redlock"
)

// BenchmarkCompare runs acquire+release on 3 independent nodes with 1, 8
// and 64 goroutines, for slotlock and for redsync, as adjacent
// sub-benchmarks on the same servers. Each goroutine works on its own lock
// (its own family), and both libraries use go-redis v9 clients with one
// attempt per command. redsync does one SET NX PX round and a Lua delete;
// slotlock does one Lua acquire round (which also issues the fencing
// token) and a Lua release.
func BenchmarkCompare(b *testing.B) {
	const nodes = 3
	c := redistest.Start(b, nodes)

	l, err := redlock.New(redlock.Config{Nodes: c.Addrs(), OpTimeout: time.Second},
		locking.Options{Replica: "bench", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })

	pools := make([]rsredis.Pool, nodes)
	for i, addr := range c.Addrs() {
		cl := redis.NewClient(&redis.Options{
			Addr: addr, MaxRetries: -1, DialerRetries: 1,
			ReadTimeout: time.Second, WriteTimeout: time.Second,
			ContextTimeoutEnabled: true, DisableIdentity: true, Protocol: 2,
		})
		b.Cleanup(func() { _ = cl.Close() })
		pools[i] = rsgoredis.NewPool(cl)
	}
	rs := redsync.New(pools...)
	mutexes := make([]*redsync.Mutex, 256)
	for i := range mutexes {
		mutexes[i] = rs.NewMutex("redsync:{w"+strconv.Itoa(i)+"}:slot",
			redsync.WithExpiry(10*time.Second), redsync.WithTries(1))
	}

	for _, g := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("nodes=%d/goroutines=%d/slotlock", nodes, g), func(b *testing.B) {
			run(b, g, func(ctx context.Context, w int) error {
				lease, err := l.Acquire(ctx, locking.Key{Family: "w" + strconv.Itoa(w), Name: "slot"}, 10*time.Second)
				if err != nil {
					return err
				}
				return lease.End(ctx, locking.Ending{}).Err
			})
		})
		b.Run(fmt.Sprintf("nodes=%d/goroutines=%d/redsync", nodes, g), func(b *testing.B) {
			run(b, g, func(ctx context.Context, w int) error {
				m := mutexes[w]
				if err := m.LockContext(ctx); err != nil {
					return err
				}
				_, err := m.UnlockContext(ctx)
				return err
			})
		})
	}
}

// run runs b.N operations spread over g goroutines.
func run(b *testing.B, g int, op func(ctx context.Context, worker int) error) {
	ctx := context.Background()
	for w := 0; w < g; w++ {
		if err := op(ctx, w); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	var next atomic.Int64
	var failed atomic.Pointer[error]
	var wg sync.WaitGroup
	for w := 0; w < g; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if err := op(ctx, w); err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	if e := failed.Load(); e != nil {
		b.Fatal(*e)
	}
}
