package redlock_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/redistest"
)

// BenchmarkSlotLockCPU measures what one slot's lock calls cost the
// replica's process (not the nodes: they are processes of their own), on
// real Redis (3 nodes): the winner's cycle (claim with its job lease,
// Start, End with done marker, log entry, job lease and record), and a
// losing claim, refused by the live lease or by the done marker — one
// call at a time, so that the figures are per call and not per pipeline;
// and the winner's cycle from 16 goroutines (16 jobs) at once, whose
// calls share pipelines, as a burst's do. Allocations per op are close
// to deterministic; client-cpu-µs/op is the process's user+system time,
// which a busy host skews less than the wall time.
//
//	go test ./locking/redlock -run '^$' -bench SlotLockCPU -benchmem -count 5
func BenchmarkSlotLockCPU(b *testing.B) {
	c := redistest.Start(b, 3)
	var ls [2]locking.Locker
	for i := range ls {
		ls[i] = newCostLocker(b, c, "cpu-"+strconv.Itoa(i))
	}
	ctx := context.Background()
	run := locking.Key{Family: "cpujob", Name: "run"}
	slot := func(i int) locking.Key { return locking.Key{Family: "cpujob", Name: "slot:" + strconv.Itoa(i)} }
	n := 0 // slots (and jobs, next) are never reused across sub-benchmarks and their rounds
	var next atomic.Int64
	job := func() string { return "cpujob" + strconv.Itoa(int(next.Add(1))) }
	b.Run("won", func(b *testing.B) { measureCPU(b, func(int) { n++; lockCycle(b, ls[0], "cpujob", n) }) })
	b.Run("won/goroutines=16", func(b *testing.B) {
		lockCycle(b, ls[0], job(), 0) // scripts loaded, connections open
		b.ReportAllocs()
		b.SetParallelism(8)
		cpu0 := processCPU()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			family := job()
			for i := 0; pb.Next(); i++ {
				lockCycle(b, ls[0], family, i)
			}
		})
		b.StopTimer()
		b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "client-cpu-µs/op")
	})
	b.Run("lost=held", func(b *testing.B) {
		n++
		held, err := ls[0].Claim(ctx, slot(n), time.Minute, locking.With(run))
		require.NoError(b, err)
		defer held.End(ctx, locking.Ending{Also: held.Grant().Joined})
		measureCPU(b, func(int) {
			_, err := ls[1].Claim(ctx, slot(n), 10*time.Second, locking.With(run))
			requireHeld(b, err, false)
		})
	})
	b.Run("lost=done", func(b *testing.B) {
		n++
		lockCycle(b, ls[0], "cpujob", n)
		measureCPU(b, func(int) {
			_, err := ls[1].Claim(ctx, slot(n), 10*time.Second, locking.With(run))
			requireHeld(b, err, true)
		})
	})
}

// lockCycle is a won slot's lock calls: slot i of job family.
func lockCycle(b *testing.B, l locking.Locker, family string, i int) {
	ctx := context.Background()
	key := locking.Key{Family: family, Name: "slot:" + strconv.Itoa(i)}
	claim, err := l.Claim(ctx, key, 10*time.Second, locking.With(locking.Key{Family: family, Name: "run"}))
	require.NoError(b, err)
	require.NoError(b, claim.Start())
	entry := locking.LogEntry{Score: int64(i), Value: "slot " + strconv.Itoa(i) + " succeeded"}
	require.Equal(b, driver.Released{}, claim.End(ctx, locking.Ending{DoneTTL: time.Minute, Note: "succeeded",
		Entry: &entry, Keep: 100, Also: claim.Grant().Joined, Record: locking.Key{Family: family, Name: "last"},
		RecordValue: int64(i) + 1}))
}

// measureCPU runs op b.N times, one at a time, and reports the process's
// CPU per op beside the allocations.
func measureCPU(b *testing.B, op func(i int)) {
	op(0) // scripts loaded, connections open
	b.ReportAllocs()
	cpu0 := processCPU()
	b.ResetTimer()
	for i := 1; i <= b.N; i++ {
		op(i)
	}
	b.StopTimer()
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "client-cpu-µs/op")
}
