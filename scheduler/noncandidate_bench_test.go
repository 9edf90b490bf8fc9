package scheduler

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redistest"
	"github.com/slotlock/slotlock/locking/redlock"
)

// The timer path's cost, fleet-wide, of the replicas that are no
// candidate for a slot: each of N schedulers in this process, with the
// same view of N replicas, fires one every-second job's slots through its
// timer (rank, heap step, and for a fallback the batched Handled read on
// a store that answers "handled", as after a candidate's run). The
// candidates' claims are stubbed out (counted, not sent): they are the
// same k per slot whatever N, and are measured by the Redis benchmarks.
// ns/op (and cpu-ns/slot, the process's CPU) is one slot's cost summed
// over the fleet:
//
//	go test ./scheduler -run '^$' -bench NonCandidates -benchmem -count 5 -timeout 10m
//
// store=redis makes each replica's Handled read a real one, over its own
// Redlock client to three redis-server nodes (the client's CPU is the
// process's; the nodes' is not counted), its answer then taken as
// "handled".
func BenchmarkNonCandidates(b *testing.B) {
	for _, store := range []string{"stub", "redis"} {
		for _, n := range []int{3, 9} {
			b.Run(fmt.Sprintf("store=%s/replicas=%d", store, n), func(b *testing.B) { nonCandidates(b, n, store == "redis") })
		}
	}
}

// handledLocker answers every Handled read "handled" and counts the
// reads; nothing else is called on it here. With read, it first sends
// the read to its Locker.
type handledLocker struct {
	locking.Locker
	read  bool
	reads *atomic.Int64
}

func (l *handledLocker) Handled(ctx context.Context, keys []locking.Key) ([]bool, error) {
	l.reads.Add(1)
	if l.read {
		if _, err := l.Locker.Handled(ctx, keys); err != nil {
			return nil, err
		}
	}
	out := make([]bool, len(keys))
	for i := range out {
		out[i] = true
	}
	return out, nil
}

// benchLocker is replica name's Locker for the benchmark: in-process, or
// a Redlock client of nodes.
func benchLocker(b *testing.B, name string, nodes *redistest.Cluster, reads *atomic.Int64) locking.Locker {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	if nodes == nil {
		return &handledLocker{Locker: locking.NewLocal(locking.Options{}), reads: reads}
	}
	l, err := redlock.New(redlock.Config{Nodes: nodes.Addrs()}, locking.Options{Replica: name, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	return &handledLocker{Locker: l, read: true, reads: reads}
}

// stubClaims stands for admission in the benchmark: a candidate's slot is
// counted, a fallback's goes to the real check.
type stubClaims struct {
	fired atomic.Int64
	real  *admission
}

func (s *stubClaims) fireSlot(j *job, t time.Time)  { s.fired.Add(1) }
func (s *stubClaims) checkHandled(checks []dueSlot) { s.real.checkHandled(checks) }

func nonCandidates(b *testing.B, n int, redis bool) {
	var nodes *redistest.Cluster
	if redis {
		needRedis(b)
		nodes = redistest.Start(b, 3)
	}
	var reads atomic.Int64
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("replica-%d", i)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	start := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	var scheds []*Scheduler
	var stubs []*stubClaims
	for _, name := range names {
		s, stub := viewedReplica(b, Config{Replica: name, Locker: benchLocker(b, name, nodes, &reads), Logger: quiet}, names)
		s.timer.setNext(s.jobList()[0], start)
		scheds = append(scheds, s)
		stubs = append(stubs, stub)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU() // on a shared host, the CPU spent says more than ns/op
	for i := range b.N {
		// Every replica's slot due, fallbacks included (at most half the
		// second of an every-second job), the next slot not yet.
		now := start.Add(time.Duration(i)*time.Second + 600*time.Millisecond)
		for _, s := range scheds {
			j := s.jobList()[0]
			s.timer.admit.checkHandled(s.timer.fireDue(j, now, nil))
		}
		for _, s := range scheds {
			s.wg.Wait()
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/slot")
	fired := int64(0)
	for _, st := range stubs {
		fired += st.fired.Load()
	}
	b.ReportMetric(float64(fired)/float64(b.N), "claims/slot")
	b.ReportMetric(float64(reads.Load())/float64(b.N), "handled/slot")
}

// The timer's step over a slot this replica is idle for (ranked after the
// fallbacks, of nine): ranking the slot and the next one, the schedule's
// next slot; nothing is allocated.
//
//	go test ./scheduler -run '^$' -bench IdleSlotStep -benchmem -count 5 -timeout 5m
func BenchmarkIdleSlotStep(b *testing.B) {
	names := nineNames()
	s, stub := viewedReplica(b, Config{Replica: names[0], Locker: locking.NewLocal(locking.Options{})}, names)
	j := s.jobList()[0]
	var idle []time.Time
	for i := 0; len(idle) < 1000; i++ {
		if t := bubbleStart.Add(time.Duration(i) * time.Second); s.fleet.slotRank("tick", t) >= DefaultCandidates+dueFallbacks {
			idle = append(idle, t)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		t := idle[i%len(idle)]
		s.timer.setNext(j, t)
		s.timer.fireDue(j, t.Add(600*time.Millisecond), nil)
	}
	b.StopTimer()
	if n := stub.fired.Load(); n > 0 {
		b.Fatalf("an idle replica fired %d slots", n)
	}
}

// viewedReplica is a scheduler of cfg with one every-second job "tick",
// whose view of the fleet is names and whose claims are stubbed.
func viewedReplica(b *testing.B, cfg Config, names []string) (*Scheduler, *stubClaims) {
	b.Helper()
	cfg.Jobs = []JobSpec{everySecond(b, "tick", &recorder{now: time.Now})}
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	s.fleet.viewSource = func() []string { return names }
	s.fleet.refreshView()
	stub := &stubClaims{real: s.admit}
	s.timer.admit = stub
	return s, stub
}
