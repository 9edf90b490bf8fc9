package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"time"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler"
)

// daily is a job that runs f at midnight UTC.
func daily(name string, f jobs.Func) scheduler.JobSpec {
	return schedule(name, "@daily", f)
}

// schedule is a job that runs f on spec, in UTC.
func schedule(name, spec string, f jobs.Func) scheduler.JobSpec {
	s, err := scheduler.ParseSchedule(spec, time.UTC)
	if err != nil {
		log.Fatal(err)
	}
	return scheduler.JobSpec{Name: name, Spec: spec, Schedule: s, Job: f}
}

// newScheduler is one replica on in-process locks, its audit log discarded.
func newScheduler(specs ...scheduler.JobSpec) (*scheduler.Scheduler, func()) {
	lk := locking.NewLocal(locking.Options{Replica: "replica-a"})
	s, err := scheduler.New(scheduler.Config{
		Replica: "replica-a",
		Locker:  lk,
		Logger:  slog.New(slog.DiscardHandler),
		Jobs:    specs,
	})
	if err != nil {
		log.Fatal(err)
	}
	return s, func() { lk.Close() }
}

// Trigger runs a job once now, as a manual slot, under the same locks as
// its scheduled runs, whether or not Run is going on; it returns when the
// run has ended, with nil only if it succeeded.
func ExampleScheduler_Trigger() {
	invoice := daily("invoice", func(ctx context.Context, run jobs.Run) error {
		fmt.Printf("%s: slot %s, manual %v, with a fencing token %v\n", run.Job, run.SlotString(), run.Manual, run.FencingToken > 0)
		return nil
	})
	broken := daily("broken", func(context.Context, jobs.Run) error {
		return errors.New("disk full")
	})
	s, closeLocks := newScheduler(invoice, broken)
	defer closeLocks()
	ctx := context.Background()

	fmt.Println("invoice:", s.Trigger(ctx, "invoice"))
	err := s.Trigger(ctx, "broken")
	fmt.Println("broken failed:", errors.Is(err, scheduler.ErrRunFailed))
	err = s.Trigger(ctx, "payroll")
	fmt.Println("payroll unknown:", errors.Is(err, scheduler.ErrUnknownJob))
	// Output:
	// invoice: slot manual, manual true, with a fencing token true
	// invoice: <nil>
	// broken failed: true
	// payroll unknown: true
}

// Reload replaces the job definitions of a running scheduler: it checks
// them as New does (nothing changes on an error), waits until the loop has
// put them in force and says what changed, by job name. A replica's other
// settings (locks, lateness, ...) need a restart.
func ExampleScheduler_Reload() {
	nothing := jobs.Func(func(context.Context, jobs.Run) error { return nil })
	s, closeLocks := newScheduler(daily("invoice", nothing), schedule("digest", "@weekly", nothing))
	defer closeLocks()
	ctx, stop := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- s.Run(ctx) }()

	res, err := s.Reload(ctx, "v2", []scheduler.JobSpec{
		schedule("invoice", "@hourly", nothing), // rescheduled
		daily("cleanup", nothing),               // added; digest is removed
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("added:", res.Added)
	fmt.Println("removed:", res.Removed)
	fmt.Println("rescheduled:", res.Rescheduled)

	// A bad definition (here, two jobs of one name) changes nothing.
	_, err = s.Reload(ctx, "v3", []scheduler.JobSpec{daily("invoice", nothing), daily("invoice", nothing)})
	fmt.Println("v3 refused:", err != nil)

	stop()
	fmt.Println("run:", <-stopped)
	// Output:
	// added: [cleanup]
	// removed: [digest]
	// rescheduled: [invoice]
	// v3 refused: true
	// run: <nil>
}
