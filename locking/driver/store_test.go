package driver_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/slotlock/slotlock/locking/driver"
)

// TestInsertLogIsMergeLogs holds InsertLog to what the stores did before
// it, MergeLogs of the entry and the log: random logs, entries already
// there, ties of score, limits below, at and above the length.
func TestInsertLogIsMergeLogs(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 2000 {
		var log []driver.LogEntry
		for range r.IntN(12) {
			log = append(log, randomEntry(r))
		}
		log = driver.MergeLogs([][]driver.LogEntry{log}, len(log))
		e := randomEntry(r)
		if len(log) > 0 && r.IntN(4) == 0 {
			e = log[r.IntN(len(log))] // an entry already there: kept once
		}
		limit := r.IntN(len(log)+3) - 1
		want := driver.MergeLogs([][]driver.LogEntry{{e}, log}, max(limit, 0))
		got := driver.InsertLog(slices.Clone(log), e, limit)
		if !slices.Equal(got, want) {
			t.Fatalf("case %d: InsertLog(%v, %v, %d) = %v, MergeLogs gives %v", n, log, e, limit, got, want)
		}
	}
}

func randomEntry(r *rand.Rand) driver.LogEntry {
	return driver.LogEntry{Score: int64(r.IntN(6)), Value: fmt.Sprint("v", r.IntN(4))}
}

// BenchmarkInsertLog is a run's end on a store that keeps a full job's
// history (the default 1,000 entries): the new entry is the newest.
func BenchmarkInsertLog(b *testing.B) {
	const keep = 1000
	for _, insert := range []struct {
		name string
		f    func([]driver.LogEntry, driver.LogEntry) []driver.LogEntry
	}{
		{"merge", func(l []driver.LogEntry, e driver.LogEntry) []driver.LogEntry {
			return driver.MergeLogs([][]driver.LogEntry{{e}, l}, keep)
		}},
		{"insert", func(l []driver.LogEntry, e driver.LogEntry) []driver.LogEntry {
			return driver.InsertLog(l, e, keep)
		}},
	} {
		b.Run(insert.name, func(b *testing.B) {
			var log []driver.LogEntry
			score := int64(0)
			for range keep {
				score++
				log = insert.f(log, driver.LogEntry{Score: score, Value: fmt.Sprint("slot ", score)})
			}
			b.ReportAllocs()
			for b.Loop() {
				score++
				log = insert.f(log, driver.LogEntry{Score: score, Value: "slot"})
			}
		})
	}
}
