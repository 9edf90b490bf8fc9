package redlock_test

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/locking/redistest"
	"github.com/slotlock/slotlock/locking/redlock"
)

// BenchmarkSlotLockCPU measures what one slot's lock calls cost the
// replica's process (not the nodes: they are processes of their own), on
// real Redis (3 nodes), one call at a time so that the figures are per
// call and not per pipeline: the winner's cycle (claim with its job lease,
// Start, End with done marker, log entry, job lease and record), and a
// losing claim, refused by the live lease or by the done marker. Allocations
// per op are close to deterministic; client-cpu-µs/op is the process's
// user+system time, which a busy host skews less than the wall time.
//
//	go test ./locking/redlock -run '^$' -bench SlotLockCPU -benchmem -count 5
func BenchmarkSlotLockCPU(b *testing.B) {
	c := redistest.Start(b, 3)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var ls [2]locking.Locker
	for i := range ls {
		l, err := redlock.New(redlock.Config{Nodes: c.Addrs(), OpTimeout: 2 * time.Second},
			locking.Options{Replica: "cpu-" + strconv.Itoa(i), Logger: quiet})
		require.NoError(b, err)
		b.Cleanup(func() { _ = l.Close() })
		ls[i] = l
	}
	ctx := context.Background()
	run := locking.Key{Family: "cpujob", Name: "run"}
	last := locking.Key{Family: "cpujob", Name: "last"}
	slot := func(i int) locking.Key { return locking.Key{Family: "cpujob", Name: "slot:" + strconv.Itoa(i)} }
	cycle := func(i int) {
		claim, err := ls[0].Claim(ctx, slot(i), 10*time.Second, locking.With(run))
		require.NoError(b, err)
		require.NoError(b, claim.Start())
		entry := locking.LogEntry{Score: int64(i), Value: "slot " + strconv.Itoa(i) + " succeeded"}
		require.Equal(b, driver.Released{}, claim.End(ctx, locking.Ending{DoneTTL: time.Minute, Note: "succeeded",
			Entry: &entry, Keep: 100, Also: claim.Grant().Joined, Record: last, RecordValue: int64(i)}))
	}
	measure := func(b *testing.B, op func(i int)) {
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
	n := 0 // slots are never reused across sub-benchmarks and their rounds
	b.Run("won", func(b *testing.B) { measure(b, func(int) { n++; cycle(n) }) })
	b.Run("lost=held", func(b *testing.B) {
		n++
		held, err := ls[0].Claim(ctx, slot(n), time.Minute, locking.With(run))
		require.NoError(b, err)
		defer held.End(ctx, locking.Ending{Also: held.Grant().Joined})
		measure(b, func(int) {
			_, err := ls[1].Claim(ctx, slot(n), 10*time.Second, locking.With(run))
			requireHeld(b, err, false)
		})
	})
	b.Run("lost=done", func(b *testing.B) {
		n++
		cycle(n)
		measure(b, func(int) {
			_, err := ls[1].Claim(ctx, slot(n), 10*time.Second, locking.With(run))
			requireHeld(b, err, true)
		})
	})
}
