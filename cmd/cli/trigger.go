package cli

import (
	"context"
	"fmt"
	"slices"

	"github.com/slotlock/slotlock/cmd/config"
	"github.com/slotlock/slotlock/scheduler"
)

func cmdTrigger(ctx context.Context, args []string, env Env) int {
	f := newFlags("trigger", env)
	pos, err := f.parse(args)
	if err != nil {
		return exitConfig
	}
	if len(pos) != 1 {
		fmt.Fprintln(env.Stderr, "usage: slotlock trigger [--config FILE] JOB")
		return exitConfig
	}
	job := pos[0]
	cfg, ok := loadConfig(f.configPath(env), env)
	if !ok {
		return exitConfig
	}
	if !slices.ContainsFunc(cfg.Jobs, func(j config.Job) bool { return j.Name == job }) {
		fmt.Fprintf(env.Stderr, "slotlock trigger: no job named %q in the configuration\n", job)
		return exitConfig
	}
	r, code := start(ctx, "trigger", cfg, env)
	if r == nil {
		return code
	}
	defer r.close()
	if len(cfg.Redis.Nodes) == 0 {
		r.log.Warn("trigger with in-process locks: this run does not coordinate with a running replica; configure redis.nodes for overlap: forbid to hold across processes", "job", job)
	}
	if err := r.sched.Trigger(ctx, job); err != nil {
		// On stderr like every other line, in the configured log format.
		r.log.Error("trigger failed", "job", job, "slot", scheduler.SlotManual, "error", err.Error())
		return exitFailure
	}
	return exitOK
}
