package scheduler

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redistest"
	"github.com/slotlock/slotlock/locking/redlock"
	"github.com/slotlock/slotlock/scheduler/history"
)

// Benchmarks with three real redis-server nodes and three schedulers in
// this process (clocks without offset: the replicas fire in the same
// millisecond, the hardest case for the lock). They run for a fixed real
// duration, whatever b.N; run them with -benchtime=1x:
//
//	go test -run '^$' -bench . -benchtime=1x ./scheduler/
//
// SLOTLOCK_BENCH_SECONDS changes the duration (default 60 and 30 for the
// start delay, 20 for the scale runs); SLOTLOCK_BENCH_JOBS the scale points
// (default "100,1000,5000").

func benchSeconds(def int) time.Duration {
	if v, err := strconv.Atoi(os.Getenv("SLOTLOCK_BENCH_SECONDS")); err == nil && v > 0 {
		return time.Duration(v) * time.Second
	}
	return time.Duration(def) * time.Second
}

func benchSpread() time.Duration {
	d, _ := time.ParseDuration(os.Getenv("SLOTLOCK_BENCH_SPREAD"))
	return d
}

// counting is a no-op job that counts its runs per slot and records its
// start delay on the real clock.
type counting struct {
	base  int64 // first slot (unix) counted
	slots []atomic.Int32
	mu    sync.Mutex
	delay []time.Duration
}

func (c *counting) Run(ctx context.Context, run jobs.Run) error {
	d := time.Since(run.Slot)
	i := run.Slot.Unix() - c.base
	if i >= 0 && i < int64(len(c.slots)) {
		c.slots[i].Add(1)
	}
	c.mu.Lock()
	c.delay = append(c.delay, d)
	c.mu.Unlock()
	return nil
}

// benchMetrics counts Acquire outcomes and latencies.
type benchMetrics struct {
	mu      sync.Mutex
	acq     []time.Duration
	outcome map[string]int
}

func (m *benchMetrics) SlotSkipped(job string, reason history.Reason) {
	m.mu.Lock()
	m.outcome["skip:"+string(reason)]++
	m.mu.Unlock()
}
func (m *benchMetrics) RunFinished(string, history.Outcome, time.Duration) {}
func (m *benchMetrics) StartDelay(string, time.Duration)                   {}
func (m *benchMetrics) LeaseLost(string)                                   {}
func (m *benchMetrics) RunAbandoned(string)                                {}
func (m *benchMetrics) JobPaused(string, bool)                             {}
func (m *benchMetrics) SlotMissed(string, history.Reason)                  {}
func (m *benchMetrics) JobOutcome(string, history.Outcome, time.Time)      {}
func (m *benchMetrics) LockAcquire(job string, d time.Duration, err error) {
	k := "acquired"
	switch {
	case err == nil:
	case isSplitVote(err):
		k = "split_vote"
	case errors.Is(err, locking.ErrNotAcquired):
		k = "held"
	default:
		k = "error"
	}
	m.mu.Lock()
	m.acq = append(m.acq, d)
	m.outcome[k]++
	m.mu.Unlock()
}

type benchCluster struct {
	metrics  *benchMetrics
	nodes    *redistest.Cluster
	replicas []*replica
	jobs     []*counting
	stopOnce sync.Once
}

// startBench starts three schedulers with n every-second jobs each.
func startBench(b *testing.B, nodes *redistest.Cluster, n int, overlap Overlap, maxSlots int) *benchCluster {
	b.Helper()
	bc := &benchCluster{nodes: nodes, metrics: &benchMetrics{outcome: map[string]int{}}}
	base := time.Now().Unix()
	for range n {
		bc.jobs = append(bc.jobs, &counting{base: base, slots: make([]atomic.Int32, maxSlots)})
	}
	quiet := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	for r := range 3 {
		name := fmt.Sprintf("replica-%d", r)
		l, err := redlock.New(redlock.Config{Nodes: nodes.Addrs()},
			locking.Options{Replica: name, Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		var specs []JobSpec
		for i, j := range bc.jobs {
			spec := everySecond(b, fmt.Sprintf("job-%05d", i), j)
			spec.Overlap = overlap
			specs = append(specs, spec)
		}
		inflight, _ := strconv.Atoi(os.Getenv("SLOTLOCK_BENCH_INFLIGHT"))
		s, err := New(Config{Replica: name, Locker: l, Logger: quiet.With("replica", name), Metrics: bc.metrics,
			MaxInFlight:  inflight,
			MaxClockSkew: time.Second, LockTTL: 10 * time.Second, ShutdownGrace: 5 * time.Second, Jobs: specs})
		if err != nil {
			b.Fatal(err)
		}
		rp := &replica{name: name, sched: s, locker: l}
		rp.stop = running(b, s)
		bc.replicas = append(bc.replicas, rp)
	}
	return bc
}

func (bc *benchCluster) stop() {
	bc.stopOnce.Do(func() {
		var wg sync.WaitGroup
		for _, r := range bc.replicas {
			wg.Go(func() { r.stop(); _ = r.locker.Close() })
		}
		wg.Wait()
	})
}

// check counts the runs of slots [from, to] (unix) of every job: how many
// slots were checked, ran twice or more (never allowed), and did not run.
func (bc *benchCluster) check(from, to int64) (checked, dups, missed int, examples []string) {
	for ji, j := range bc.jobs {
		for sl := from; sl <= to; sl++ {
			checked++
			got := j.slots[sl-j.base].Load()
			switch {
			case got > 1:
				dups++
			case got == 0:
				missed++
			default:
				continue
			}
			if len(examples) < 10 {
				examples = append(examples, fmt.Sprintf("job-%05d slot %s ran %d times", ji, slotString(time.Unix(sl, 0)), got))
			}
		}
	}
	return checked, dups, missed, examples
}

func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p/100*float64(len(s)-1) + 0.5)
	return s[i]
}

func msf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// commandStats returns, summed over the nodes, the calls per command from
// INFO commandstats, without the commands the benchmark itself sends.
func commandStats(b *testing.B, nodes *redistest.Cluster) (map[string]int64, float64) {
	b.Helper()
	out := map[string]int64{}
	var cpu float64
	for _, n := range nodes.Nodes() {
		info, err := n.Client().Info(context.Background(), "commandstats", "cpu").Result()
		if err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(strings.NewReader(info))
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if name, rest, ok := strings.Cut(line, ":"); ok && strings.HasPrefix(name, "cmdstat_") {
				cmd := strings.TrimPrefix(name, "cmdstat_")
				if cmd == "info" || cmd == "hello" || cmd == "client|setinfo" {
					continue
				}
				for _, kv := range strings.Split(rest, ",") {
					if v, ok := strings.CutPrefix(kv, "calls="); ok {
						c, _ := strconv.ParseInt(v, 10, 64)
						out[cmd] += c
					}
				}
			}
			if v, ok := strings.CutPrefix(line, "used_cpu_sys:"); ok {
				f, _ := strconv.ParseFloat(v, 64)
				cpu += f
			}
			if v, ok := strings.CutPrefix(line, "used_cpu_user:"); ok {
				f, _ := strconv.ParseFloat(v, 64)
				cpu += f
			}
		}
	}
	return out, cpu
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkStartDelay measures actual start - nominal slot for every-second
// jobs on three replicas over three nodes, beside the floor measured in the
// same run: one parallel SET NX round trip to the three nodes, and one
// uncontended Redlock Acquire, each issued once a second like a slot, and
// back to back. jobs=1 is one slot per second (the floor case; forbid takes
// two leases one after the other, allow one); jobs=10 fires ten jobs in the
// same millisecond on every replica.
func BenchmarkStartDelay(b *testing.B) {
	needRedis(b)
	for _, c := range []struct {
		jobs    int
		overlap Overlap
		secs    int
	}{{1, OverlapForbid, 60}, {1, OverlapAllow, 60}, {10, OverlapForbid, 30}} {
		b.Run(fmt.Sprintf("jobs=%d/overlap=%s", c.jobs, c.overlap), func(b *testing.B) {
			startDelay(b, c.jobs, c.overlap, benchSeconds(c.secs))
		})
	}
}

func startDelay(b *testing.B, jobsN int, overlap Overlap, dur time.Duration) {
	nodes := redistest.Start(b, 3)
	hotRTT, hotAcq := measureFloor(b, nodes, 500, 0)
	bc := startBench(b, nodes, jobsN, overlap, int(dur/time.Second)+10)
	start := time.Now()
	// The floor in the same conditions: one lock round trip issued once a
	// second (between the slots, at x.5s), after the same idle time.
	var idleRTT, idleAcq []time.Duration
	floorDone := make(chan struct{})
	go func() {
		defer close(floorDone)
		idleRTT, idleAcq = measureFloor(b, nodes, int(dur/time.Second)-1, time.Second)
	}()
	time.Sleep(dur)
	<-floorDone
	bc.stop()
	from, to := start.Unix()+2, start.Unix()+int64(dur/time.Second)-2
	checked, dups, missed, bad := bc.check(from, to)
	if dups+missed > 0 {
		b.Errorf("exactly-once violated: %d slots ran twice, %d not at all: %v", dups, missed, bad)
	}
	var delays []time.Duration
	for _, j := range bc.jobs {
		delays = append(delays, j.delay...)
	}
	b.ReportMetric(msf(percentile(delays, 50)), "p50_ms")
	b.ReportMetric(msf(percentile(delays, 99)), "p99_ms")
	b.ReportMetric(msf(percentile(delays, 100)), "max_ms")
	b.ReportMetric(msf(percentile(idleRTT, 50)), "rtt_p50_ms")
	b.ReportMetric(msf(percentile(idleRTT, 99)), "rtt_p99_ms")
	b.ReportMetric(msf(percentile(idleAcq, 50)), "acquire_p50_ms")
	b.ReportMetric(msf(percentile(idleAcq, 99)), "acquire_p99_ms")
	b.Logf("%d jobs x %v: %d runs, %d slots checked (each ran exactly once); lock calls %v; in-run Acquire latency p50 %v p99 %v",
		jobsN, dur, len(delays), checked, bc.metrics.outcome, percentile(bc.metrics.acq, 50), percentile(bc.metrics.acq, 99))
	b.Logf("floor once a second (x.5s): SET NX round trip p50 %v p99 %v, Acquire p50 %v p99 %v; back to back: SET NX p50 %v p99 %v, Acquire p50 %v p99 %v",
		percentile(idleRTT, 50), percentile(idleRTT, 99), percentile(idleAcq, 50), percentile(idleAcq, 99),
		percentile(hotRTT, 50), percentile(hotRTT, 99), percentile(hotAcq, 50), percentile(hotAcq, 99))
}

// measureFloor times n rounds of (a) one SET NX PX fanned out to every
// node in parallel and (b) one Redlock Acquire of a fresh key (plus its
// Release, not timed): back to back when every is 0, else one round at the
// middle of each period of length every.
func measureFloor(b *testing.B, nodes *redistest.Cluster, n int, every time.Duration) (rtt, acq []time.Duration) {
	ctx := context.Background()
	clients := make([]*redis.Client, 0, 3)
	for _, addr := range nodes.Addrs() {
		c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DisableIdentity: true})
		defer c.Close()
		clients = append(clients, c)
	}
	l, err := redlock.New(redlock.Config{Nodes: nodes.Addrs()},
		locking.Options{Replica: "floor", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Error(err)
		return nil, nil
	}
	defer l.Close()
	for i := range n {
		if every > 0 {
			now := time.Now()
			time.Sleep(now.Truncate(every).Add(every + every/2).Sub(now))
		}
		key := fmt.Sprintf("floor:{f}:%d:%d", every, i)
		start := time.Now()
		var wg sync.WaitGroup
		for _, c := range clients {
			wg.Go(func() { c.SetNX(ctx, key, "x", 10*time.Second) })
		}
		wg.Wait()
		rtt = append(rtt, time.Since(start))
		if every > 0 {
			time.Sleep(100 * time.Millisecond) // the Acquire, too, after idling
		}
		start = time.Now()
		lease, err := l.Acquire(ctx, locking.Key{Family: "floor", Name: fmt.Sprintf("k%d:%d", every, i)}, 10*time.Second)
		acq = append(acq, time.Since(start))
		if err != nil {
			b.Error(err)
			return rtt, acq
		}
		lease.End(ctx, locking.Ending{})
	}
	return rtt, acq
}

// BenchmarkScale runs many every-second jobs on three replicas and reports
// Redis commands per slot (INFO commandstats, all nodes, all replicas),
// CPU of the process (three replicas) and of the Redis nodes, and checks
// that every slot ran exactly once.
func BenchmarkScale(b *testing.B) {
	needRedis(b)
	points := []int{100, 1000, 5000}
	if v := os.Getenv("SLOTLOCK_BENCH_JOBS"); v != "" {
		points = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				b.Fatal(err)
			}
			points = append(points, n)
		}
	}
	for _, overlap := range []Overlap{OverlapForbid, OverlapAllow} {
		for _, n := range points {
			b.Run(fmt.Sprintf("overlap=%s/jobs=%d", overlap, n), func(b *testing.B) {
				scale(b, n, overlap)
			})
		}
	}
}

func scale(b *testing.B, n int, overlap Overlap) {
	nodes := redistest.Start(b, 3)
	dur := benchSeconds(20)
	cmds0, rcpu0 := commandStats(b, nodes)
	cpu0 := processCPU()
	bc := startBench(b, nodes, n, overlap, int(dur/time.Second)+10)
	start := time.Now()
	time.Sleep(dur)
	bc.stop()
	elapsed := time.Since(start)
	cpu := processCPU() - cpu0
	cmds1, rcpu1 := commandStats(b, nodes)

	from, to := start.Unix()+2, start.Unix()+int64(dur/time.Second)-2
	// A slot must never run twice. Slots not run at all are the load this
	// host could not carry within the lateness bound: shed as late (a
	// slot.skipped reason late on every replica), reported as missed_%.
	checked, dups, missed, bad := bc.check(from, to)
	if dups > 0 {
		b.Errorf("%d slots ran twice in the %d-job run: %v", dups, n, bad)
	}
	if missed > 0 {
		b.Logf("host capacity exceeded: %d of %d slots (%.1f%%) shed as late, e.g. %v",
			missed, checked, 100*float64(missed)/float64(checked), bad[:min(3, len(bad))])
	}
	b.ReportMetric(100*float64(missed)/float64(checked), "missed_%")
	runs := 0
	var delays []time.Duration
	for _, j := range bc.jobs {
		runs += len(j.delay)
		delays = append(delays, j.delay...)
	}
	var total int64
	var parts []string
	for cmd, c := range cmds1 {
		d := c - cmds0[cmd]
		if d == 0 {
			continue
		}
		total += d
		parts = append(parts, fmt.Sprintf("%s=%.2f", cmd, float64(d)/float64(runs)))
	}
	slices.Sort(parts)
	perSlot := float64(total) / float64(runs)
	b.ReportMetric(perSlot, "cmds/slot")
	b.ReportMetric(cpu.Seconds()/elapsed.Seconds()/3*100, "cpu%/replica")
	b.ReportMetric((rcpu1-rcpu0)/elapsed.Seconds()/3*100, "cpu%/redis-node")
	b.ReportMetric(msf(percentile(delays, 50)), "delay_p50_ms")
	b.ReportMetric(msf(percentile(delays, 99)), "delay_p99_ms")
	b.Logf("jobs=%d overlap=%s: %v, %d runs (%.0f slots/s), %d slots checked; lock calls %v; commands per slot %.2f (%s); process CPU %v (%.1f%% of one core per replica)",
		n, overlap, elapsed.Round(time.Millisecond), runs, float64(runs)/elapsed.Seconds(), checked, bc.metrics.outcome, perSlot,
		strings.Join(parts, " "), cpu.Round(time.Millisecond), cpu.Seconds()/elapsed.Seconds()/3*100)
}
