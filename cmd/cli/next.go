package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/slotlock/slotlock/scheduler"
)

func cmdNext(args []string, env Env) int {
	f := newFlags("next", env)
	n := f.Int("n", 5, "how many slots per job")
	pos, err := f.parse(args)
	if err != nil {
		return exitConfig
	}
	if len(pos) > 1 {
		fmt.Fprintln(env.Stderr, "usage: slotlock next [--config FILE] [-n N] [JOB]")
		return exitConfig
	}
	if err := scheduler.CheckNext(*n); err != nil {
		fmt.Fprintln(env.Stderr, "slotlock next: -"+err.Error())
		return exitConfig
	}
	cfg, ok := loadConfig(f.configPath(env), env)
	if !ok {
		return exitConfig
	}
	offset, err := clockOffset(env.getenv)
	if err != nil {
		fmt.Fprintln(env.Stderr, err)
		return exitConfig
	}
	now := time.Now().Add(offset)
	found := false
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tSCHEDULE\tZONE TIME\tUTC")
	for _, j := range cfg.JobSpecs() {
		if len(pos) == 1 && j.Name != pos[0] {
			continue
		}
		found = true
		name := j.Name
		if !j.Enabled {
			name += " (disabled)"
		}
		t := now
		for i := 0; i < *n; i++ {
			t = j.Schedule.Next(t)
			if t.IsZero() {
				fmt.Fprintf(tw, "%s\t%s\t(no further slots)\t\n", name, j.Spec)
				break
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, j.Spec,
				t.In(j.Location).Format("2006-01-02 15:04:05 MST -07:00"),
				t.UTC().Format(time.RFC3339))
		}
	}
	if len(pos) == 1 && !found {
		fmt.Fprintf(env.Stderr, "slotlock next: no job named %q in the configuration\n", pos[0])
		return exitConfig
	}
	if err := tw.Flush(); err != nil {
		return exitFailure
	}
	return exitOK
}
