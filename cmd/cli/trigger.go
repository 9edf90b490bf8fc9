package cli

import (
	"context"
	"fmt"
	"slices"

	"github.com/slotlock/slotlock/internal/config"
	"github.com/slotlock/slotlock/scheduler"
	"github.com/slotlock/slotlock/scheduler/history"
)

func cmdTrigger(ctx context.Context, args []string, env cmdEnv) int {
	f := newFlags("trigger", env)
	cfg, job, ok := loadForJob(f, args, env, "")
	if !ok {
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
	if recordControl(ctx, r, env, history.ControlTrigger, job, "manual run requested", nil) != nil {
		return exitFailure
	}
	h, err := r.sched.TriggerRun(ctx, job)
	if h != nil {
		// The manual run's outcome, as a slot's history entry, in the
		// audit beside the request.
		_ = recordControl(context.WithoutCancel(ctx), r, env, history.ControlTrigger, job, "manual run "+string(h.Outcome), h)
	}
	if err != nil {
		// On stderr like every other line, in the configured log format.
		r.log.Error("trigger failed", "job", job, "slot", scheduler.SlotManual, "error", err.Error())
		return exitFailure
	}
	return exitOK
}

// loadForJob parses the arguments of a command that takes one job name,
// loads the configuration and checks that the job is in it. false means a
// usage or configuration error, already printed (exit 2). flagsUsage is the
// command's own flags for the usage line.
func loadForJob(f *flags, args []string, env cmdEnv, flagsUsage string) (*config.Config, string, bool) {
	job, ok := jobArg(f, args, env, flagsUsage)
	if !ok {
		return nil, "", false
	}
	cfg, ok := loadConfig(f.configPath(env), env)
	if !ok {
		return nil, "", false
	}
	if !slices.ContainsFunc(cfg.Jobs, func(j config.Job) bool { return j.Name == job }) {
		fmt.Fprintf(env.Stderr, "slotlock %s: no job named %s in the configuration\n", f.Name(), quoteArg(job))
		return nil, "", false
	}
	return cfg, job, true
}

// loadJobArg is loadForJob for a command on the fleet through the stores
// (loadStoreConfig), which also knows the jobs the fleet publishes
// (fleetJob): the job need not be in the configuration, nor the
// configuration in a file.
func loadJobArg(f *flags, args []string, env cmdEnv, flagsUsage string) (*config.Config, string, bool) {
	job, ok := jobArg(f, args, env, flagsUsage)
	if !ok {
		return nil, "", false
	}
	cfg, ok := loadStoreConfig(f, env)
	if !ok {
		return nil, "", false
	}
	return cfg, job, true
}

// jobArg parses the arguments of a command that takes one job name.
func jobArg(f *flags, args []string, env cmdEnv, flagsUsage string) (string, bool) {
	pos, err := f.parse(args)
	if err != nil {
		return "", false
	}
	if len(pos) != 1 {
		fmt.Fprintf(env.Stderr, "usage: slotlock %s [--config FILE] %sJOB\n", f.Name(), flagsUsage)
		return "", false
	}
	return pos[0], true
}
