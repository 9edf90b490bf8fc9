package scheduler

import (
	"context"
	"log/slog"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"
)

// BenchmarkSlotAttempt measures one replica's whole path through a slot,
// in process: the slot's claim, the job lease, the run of a no-op job,
// the done marker with its history entry, the lease's release, the
// record; on the in-process lock store, so that the scheduler's own cost
// is what is measured. Tracing off (a nil provider) is the default; on is
// the SDK with a batch processor and an exporter that drops the spans.
// Compare "off" with the commit before tracing existed (the figures are
// in docs/operations.md, "Tracing"):
//
//	go test -run '^$' -bench SlotAttempt -benchmem -count 5 ./scheduler
func BenchmarkSlotAttempt(b *testing.B) {
	b.Run("tracing=off", func(b *testing.B) { benchSlotAttempt(b, nil) })
	b.Run("tracing=on", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		defer func() { _ = tp.Shutdown(context.Background()) }()
		benchSlotAttempt(b, tp)
	})
}

func benchSlotAttempt(b *testing.B, tp trace.TracerProvider) {
	log := slog.New(slog.DiscardHandler)
	clock := newJumpClock(0)
	locker := locking.NewLocal(locking.Options{Replica: "bench", Clock: clock, Logger: log, TracerProvider: tp})
	defer locker.Close()
	ran := 0 // runs one at a time: attemptSlot returns after its run
	job := funcJob(func(context.Context, jobs.Run) error { ran++; return nil })
	s, err := New(Config{Replica: "bench", Locker: locker, Clock: clock, Logger: log, TracerProvider: tp,
		Jobs: []JobSpec{everySecond(b, "tick", job)}})
	if err != nil {
		b.Fatal(err)
	}
	j, _ := s.job("tick")
	b.ReportAllocs()
	for b.Loop() {
		// Each iteration a new slot, a second after the last, tried on time.
		clock.jump(time.Second)
		s.attempts.attemptSlot(j, clock.Now().Truncate(time.Second), originScheduled, nil)
	}
	if ran != b.N {
		b.Fatalf("%d runs in %d slot attempts: every attempt must run its slot", ran, b.N)
	}
}
