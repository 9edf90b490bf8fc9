package redlock_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redistest"
	"github.com/slotlock/slotlock/locking/redlock"
)

// The benchmarks compare Acquire+Release with the floor: one SET NX PX and
// one DEL per node, fanned out in parallel with go-redis, on the same
// servers in the same run. Each goroutine works on its own key of its own
// family (as each job has its own family), so the figures measure the
// protocol's cost, not contention.
//
//	go test -bench . -run '^$' ./locking/

var benchGoroutines = []int{1, 8, 64}

// BenchmarkAcquireRelease runs, for each node count and goroutine count,
// the floor and slotlock's Redlock side by side (adjacent sub-benchmarks,
// same servers), so a busy machine skews both alike.
func BenchmarkAcquireRelease(b *testing.B) {
	for _, nodes := range []int{1, 3} {
		c := redistest.Start(b, nodes)
		l, err := redlock.New(redlock.Config{Nodes: c.Addrs(), OpTimeout: time.Second},
			locking.Options{Replica: "bench", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = l.Close() })
		clients := make([]*redis.Client, nodes)
		for i, addr := range c.Addrs() {
			clients[i] = redis.NewClient(&redis.Options{
				Addr: addr, MaxRetries: -1, DialerRetries: 1,
				ReadTimeout: time.Second, WriteTimeout: time.Second,
				ContextTimeoutEnabled: true, DisableIdentity: true, Protocol: 2,
			})
			b.Cleanup(func() { _ = clients[i].Close() })
		}
		benchServers = clients
		for _, g := range benchGoroutines {
			b.Run(fmt.Sprintf("nodes=%d/goroutines=%d/floor", nodes, g), func(b *testing.B) {
				runParallel(b, g, func(ctx context.Context, worker int) error {
					key := "floor:{" + keyNames[worker] + "}:slot"
					if err := fanout(ctx, clients, func(ctx context.Context, c *redis.Client) error {
						return c.SetNX(ctx, key, "0123456789abcdef0123456789abcdef|bench", 10*time.Second).Err()
					}); err != nil {
						return err
					}
					return fanout(ctx, clients, func(ctx context.Context, c *redis.Client) error {
						return c.Del(ctx, key).Err()
					})
				})
			})
			b.Run(fmt.Sprintf("nodes=%d/goroutines=%d/redlock", nodes, g), func(b *testing.B) {
				runParallel(b, g, func(ctx context.Context, worker int) error {
					lease, err := l.Acquire(ctx, locking.Key{Family: keyNames[worker], Name: "slot"}, 10*time.Second)
					if err != nil {
						return err
					}
					return lease.End(ctx, locking.Ending{}).Err
				})
			})
		}
	}
}

// fanout runs f on every client in parallel (the first on this goroutine),
// as the Redlock backend does.
func fanout(ctx context.Context, clients []*redis.Client, f func(context.Context, *redis.Client) error) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	errs := make([]error, len(clients))
	var wg sync.WaitGroup
	for i := 1; i < len(clients); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(ctx, clients[i])
		}()
	}
	errs[0] = f(ctx, clients[0])
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

var keyNames = func() []string {
	s := make([]string, 256)
	for i := range s {
		s[i] = "w" + strconv.Itoa(i)
	}
	return s
}()

// runParallel runs b.N operations spread over g goroutines, each with its
// own worker index.
func runParallel(b *testing.B, g int, op func(ctx context.Context, worker int) error) {
	ctx := context.Background()
	for w := 0; w < g; w++ { // warm the connection pools
		if err := op(ctx, w); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	cpu0, srv0 := processCPU(), serverCPU(ctx, benchServers)
	b.ResetTimer()
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
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
	// CPU per operation, on this client and summed over the servers: on a
	// shared machine these vary far less than the wall time does.
	n := float64(b.N)
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/n, "client-cpu-µs/op")
	b.ReportMetric(float64((serverCPU(ctx, benchServers)-srv0).Microseconds())/n, "server-cpu-µs/op")
}

// benchServers are the nodes of the running benchmark, for serverCPU.
var benchServers []*redis.Client

// processCPU is the user+system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serverCPU sums used_cpu_user + used_cpu_sys (INFO cpu) over the nodes.
func serverCPU(ctx context.Context, nodes []*redis.Client) time.Duration {
	var total time.Duration
	for _, c := range nodes {
		info, err := c.Info(ctx, "cpu").Result()
		if err != nil {
			continue
		}
		for _, line := range strings.Split(info, "\r\n") {
			k, v, ok := strings.Cut(line, ":")
			if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
				f, _ := strconv.ParseFloat(v, 64)
				total += time.Duration(f * float64(time.Second))
			}
		}
	}
	return total
}
