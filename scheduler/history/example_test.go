package history_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// A job's history as the stores hold it: here two outcomes of one slot
// (a replica's skip, then the run's own end, which overrules it) and one of
// the next, written as the engine writes them, read back newest first.
func ExampleReadEntries() {
	ctx := context.Background()
	store := locking.NewLocal(locking.Options{Replica: "r1"})
	defer store.Close()

	t := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	for _, w := range []struct {
		slot time.Time
		e    history.Entry
	}{
		{t, history.Entry{Outcome: history.OutcomeSkipped, Reason: history.ReasonLate, Replica: "r2"}},
		{t, history.Entry{Outcome: history.OutcomeSucceeded, Replica: "r1", Attempts: 1}},
		{t.Add(time.Minute), history.Entry{Outcome: history.OutcomeMissed, Reason: history.ReasonNoReplica}},
	} {
		w.e.Slot = w.slot.Format(time.RFC3339)
		if err := store.AppendLog(ctx, "report", locking.LogAppend{Entry: w.e.LogEntry(w.slot), Keep: 100}); err != nil {
			log.Fatal(err)
		}
	}

	entries, err := history.ReadEntries(ctx, store, "report", time.Time{}, 10)
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range entries {
		fmt.Println(e.Slot, e.Outcome, e.Reason)
	}
	// Output:
	// 2026-11-29T10:01:00Z missed no_replica
	// 2026-11-29T10:00:00Z succeeded
}
