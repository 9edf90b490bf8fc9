package cli

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slotlock/slotlock/internal/config"
	"github.com/slotlock/slotlock/scheduler"
	"github.com/slotlock/slotlock/scheduler/history"
)

// The jobs a command on the stores acts on: the configuration's, and
// those the fleet's replicas publish (history.Definitions) — so status,
// history, pause and resume work with only the Redis connection in the
// configuration, embedded jobs included. A job in both takes the
// configuration's definition; where the fleet's differs, the command says
// so on stderr.

// fleetJobs reads the job definitions the fleet publishes. An error means
// the stores did not answer.
func fleetJobs(ctx context.Context, r *replica) (map[string]history.JobDef, int, error) {
	rctx, cancel := context.WithTimeout(ctx, pauseTimeout)
	defer cancel()
	versions, err := history.ReadDefinitions(rctx, r.locker)
	if err != nil {
		return nil, 0, err
	}
	jobs, omitted := history.PublishedJobs(versions)
	return jobs, omitted, nil
}

// fleetJob finds the job name for command cmd: in the configuration, else
// among the jobs the fleet publishes. It returns the job's definition as
// the command sees it, whether the configuration has it, and 0, or the
// exit code after printing why not: 2 for a job neither knows, 1 when the
// stores did not answer about a job the configuration does not have.
func fleetJob(ctx context.Context, r *replica, env cmdEnv, cmd, name string) (history.JobDef, bool, int) {
	spec, inConfig := configSpec(r.cfg, name)
	published, omitted, err := fleetJobs(ctx, r)
	if err != nil {
		if inConfig {
			return spec.Definition(), true, exitOK // the configuration's, unchecked
		}
		r.log.Error(cmd+": the lock stores did not answer", "job", name, "error", err.Error())
		return history.JobDef{}, false, exitFailure
	}
	def, onFleet := published[name]
	switch {
	case inConfig && onFleet:
		warnDiffers(env, cmd, spec.Definition(), def)
		return spec.Definition(), true, exitOK
	case inConfig:
		return spec.Definition(), true, exitOK
	case onFleet:
		return def, false, exitOK
	}
	msg := fmt.Sprintf("slotlock %s: no job named %s in the configuration or among the jobs the fleet publishes", cmd, quoteArg(name))
	if omitted > 0 {
		msg += fmt.Sprintf(" (the fleet's latest definitions left out %d jobs to stay within their bound: declare the job in the configuration)", omitted)
	}
	fmt.Fprintln(env.Stderr, msg)
	return history.JobDef{}, false, exitConfig
}

// warnDiffers says on stderr, in one line, where the configuration's
// definition of a job differs from the one the fleet publishes, with both
// values of each field: an operator whose file lags behind the fleet sees
// which schedule the command reads slots by and which one the replicas fire.
func warnDiffers(env cmdEnv, cmd string, conf, fleet history.JobDef) {
	d := conf.Differences(fleet)
	if len(d) == 0 {
		return
	}
	parts := make([]string, len(d))
	for i, field := range d {
		parts[i] = fmt.Sprintf("%s %s in the configuration, %s on the fleet", field, defField(conf, field), defField(fleet, field))
	}
	fmt.Fprintf(env.Stderr, "slotlock %s: warning: job %s: the configuration's definition differs from the one the fleet publishes: %s; using the configuration's\n",
		cmd, quoteArg(conf.Name), strings.Join(parts, "; "))
}

// defField is the value of field (one of JobDef.Differences's names) in d,
// quoted where it is free text.
func defField(d history.JobDef, field string) string {
	switch field {
	case "schedule":
		return quoteArg(d.Schedule)
	case "timezone":
		return quoteArg(d.Timezone)
	case "overlap":
		return quoteArg(d.Overlap)
	case "misfire.policy":
		return quoteArg(d.Misfire)
	case "enabled":
		return strconv.FormatBool(d.Enabled)
	case "group":
		if d.Group == "" {
			return "none"
		}
		return fmt.Sprintf("%s (limit %d)", quoteArg(d.Group), d.GroupLimit)
	}
	return "?"
}

// configSpec is the configuration's definition of the job name.
func configSpec(cfg *config.Config, name string) (scheduler.JobSpec, bool) {
	for _, s := range cfg.JobSpecs() {
		if s.Name == name {
			return s, true
		}
	}
	return scheduler.JobSpec{}, false
}

// describePublished is what status shows of a job the fleet publishes: a
// schedule this build cannot read (a newer version's) lists no slot.
func describePublished(d history.JobDef) history.Job {
	j := history.Job{Name: d.Name, Spec: d.Schedule, Enabled: d.Enabled, Group: d.Group, GroupLimit: d.GroupLimit}
	loc, err := time.LoadLocation(d.Timezone)
	if err != nil {
		return j
	}
	j.Location = loc
	if s, err := scheduler.ParseSchedule(d.Schedule, loc); err == nil {
		j.Schedule = s
	}
	return j
}

// statusJobs is what `slotlock status` lists: the configuration's jobs,
// then those only the fleet publishes, by name; with only, that one job.
// A false result means the job is unknown (printed; exit 2); an error,
// that the stores did not answer.
func statusJobs(ctx context.Context, r *replica, env cmdEnv, only string) ([]history.Job, bool, error) {
	published, _, err := fleetJobs(ctx, r)
	if err != nil {
		return nil, false, err
	}
	var out []history.Job
	declared := map[string]bool{}
	for _, s := range r.cfg.JobSpecs() {
		declared[s.Name] = true
		if only != "" && s.Name != only {
			continue
		}
		if def, ok := published[s.Name]; ok {
			warnDiffers(env, "status", s.Definition(), def)
		}
		out = append(out, s.Describe())
	}
	var names []string
	for name := range published {
		if !declared[name] && (only == "" || name == only) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		out = append(out, describePublished(published[name]))
	}
	if only != "" && len(out) == 0 {
		fmt.Fprintf(env.Stderr, "slotlock status: no job named %s in the configuration or among the jobs the fleet publishes\n", quoteArg(only))
		return nil, false, nil
	}
	return out, true, nil
}
