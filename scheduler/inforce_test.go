package scheduler_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler"
)

// The replica is named once, in the locker's options: the scheduler takes
// that name, and with no Logger its audit events are JSON on stderr.
// Config returns the definitions in force with their defaults.
func TestConfigInForce(t *testing.T) {
	lk := locking.NewLocal(locking.Options{Replica: "svc-7", Logger: slog.New(slog.DiscardHandler)})
	defer lk.Close()
	s, err := scheduler.New(scheduler.Config{Locker: lk, DefinitionsHash: "h1",
		Jobs: []scheduler.JobSpec{{Name: "a", Spec: "@every 1m",
			Job: jobs.Func(func(context.Context, jobs.Run) error { return nil })}}})
	if err != nil {
		t.Fatal(err)
	}
	c := s.Config()
	if c.Replica != "svc-7" {
		t.Errorf("Replica = %q, want the locker's svc-7", c.Replica)
	}
	if _, ok := c.Logger.Handler().(*slog.JSONHandler); !ok {
		t.Errorf("default Logger's handler is %T, want a JSON handler", c.Logger.Handler())
	}
	if len(c.Jobs) != 1 || c.Jobs[0].Schedule == nil || c.Jobs[0].Overlap != scheduler.OverlapForbid || c.DefinitionsHash != "h1" {
		t.Errorf("Config().Jobs = %+v, hash %q", c.Jobs, c.DefinitionsHash)
	}
	named, err := scheduler.New(scheduler.Config{Locker: lk, Replica: "other", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if r := named.Config().Replica; r != "other" {
		t.Errorf("Replica = %q, want the one given", r)
	}
}
