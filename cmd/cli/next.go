package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/slotlock/slotlock/scheduler"
)

func cmdNext(args []string, env cmdEnv) int {
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
	if *n < 1 || *n > scheduler.MaxNext {
		fmt.Fprintf(env.Stderr, "slotlock next: -n must be between 1 and %d, got %d\n", scheduler.MaxNext, *n)
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
	var specs []scheduler.JobSpec
	jitter := false // a listed job has one: the ACTUAL UTC column is shown
	for _, j := range cfg.JobSpecs() {
		if len(pos) == 1 && j.Name != pos[0] {
			continue
		}
		specs = append(specs, j)
		jitter = jitter || j.Jitter > 0
	}
	// Without jitter the table is what it always was; with it, a last
	// column gives each slot's actual start (slot + its offset).
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	header, none := "JOB\tSCHEDULE\tZONE TIME\tUTC", "(no further slots)\t"
	if jitter {
		header, none = header+"\tACTUAL UTC", none+"\t"
	}
	fmt.Fprintln(tw, header)
	for _, j := range specs {
		name := j.Name
		if j.Disabled {
			name += " (disabled)"
		}
		// The slots that start after now: with jitter the first may be
		// nominally a little before it.
		t, due := j.NextDue(now)
		for i := 0; i < *n; i++ {
			if i > 0 {
				t = j.Schedule.Next(t)
				due = j.Due(t)
			}
			if t.IsZero() {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", name, j.Spec, none)
				break
			}
			row := fmt.Sprintf("%s\t%s\t%s\t%s", name, j.Spec,
				t.In(j.Location).Format("2006-01-02 15:04:05 MST -07:00"),
				t.UTC().Format(time.RFC3339))
			if jitter {
				row += "\t" + due.UTC().Format(actualFormat)
			}
			fmt.Fprintln(tw, row)
		}
	}
	found := len(specs) > 0
	if len(pos) == 1 && !found {
		fmt.Fprintf(env.Stderr, "slotlock next: no job named %s in the configuration\n", quoteArg(pos[0]))
		return exitConfig
	}
	if err := tw.Flush(); err != nil {
		return exitFailure
	}
	return exitOK
}

// actualFormat is RFC 3339 with milliseconds: jitter offsets are whole
// milliseconds.
const actualFormat = "2006-01-02T15:04:05.000Z07:00"
