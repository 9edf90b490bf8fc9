package cli

import (
	"fmt"
	"slices"
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
	jitter := false   // a listed job has one: the ACTUAL UTC column is shown
	calendar := false // likewise, the CALENDAR column
	for _, j := range cfg.JobSpecs() {
		if len(pos) == 1 && j.Name != pos[0] {
			continue
		}
		specs = append(specs, j)
		jitter = jitter || j.Jitter > 0
		calendar = calendar || j.Calendar != nil
	}
	// Without jitter or calendars the table is what it always was; with a
	// jitter, a column gives each slot's actual start (slot + its offset);
	// with a calendar, a last column marks the excluded dates.
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	header, none := "JOB\tSCHEDULE\tZONE TIME\tUTC", "(no further slots)\t"
	if jitter {
		header, none = header+"\tACTUAL UTC", none+"\t"
	}
	if calendar {
		header, none = header+"\tCALENDAR", none+"\t"
	}
	fmt.Fprintln(tw, header)
	for _, j := range specs {
		name := j.Name
		if j.Disabled {
			name += " (disabled)"
		}
		rows := nextRows(&j, now, *n)
		for _, r := range rows {
			fmt.Fprintln(tw, nextRowText(&j, name, r, jitter, calendar))
		}
		if len(realRows(rows)) < *n {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", name, j.Spec, none)
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

// nextRows is j's next n slots that start after now (with jitter the
// first may be nominally a little before it), with the dates its calendar
// excludes among them.
func nextRows(j *scheduler.JobSpec, now time.Time, n int) []nextRow {
	t, due := j.NextDue(now)
	var rows []nextRow
	for i := 0; i < n; i++ {
		if i > 0 {
			t = j.Schedule.Next(t)
			due = j.Due(t)
		}
		if t.IsZero() {
			break
		}
		rows = append(rows, nextRow{slot: t, due: due})
	}
	if j.Calendar != nil {
		rows = withExcluded(rows, j, now, n)
	}
	return rows
}

// nextRowText is row r of job j (shown as name) in the table, with the
// ACTUAL UTC and CALENDAR columns when the table has them.
func nextRowText(j *scheduler.JobSpec, name string, r nextRow, jitter, calendar bool) string {
	zone := r.slot.In(j.Location).Format("2006-01-02 15:04:05 MST -07:00")
	row := fmt.Sprintf("%s\t%s\t%s\t%s", name, j.Spec, zone, r.slot.UTC().Format(time.RFC3339))
	if jitter {
		actual := "-"
		if !r.excluded {
			actual = r.due.UTC().Format(actualFormat)
		}
		row += "\t" + actual
	}
	if calendar {
		mark := "-"
		if r.excluded {
			mark = fmt.Sprintf("excluded (%s: %s)", j.Calendar.Name(), zone[:len(time.DateOnly)])
		}
		row += "\t" + mark
	}
	return row
}

// actualFormat is RFC 3339 with milliseconds: jitter offsets are whole
// milliseconds.
const actualFormat = "2006-01-02T15:04:05.000Z07:00"

// nextRow is one line of `slotlock next`: a slot, or (excluded) the first
// slot after now of a date the job's calendar excludes.
type nextRow struct {
	slot, due time.Time
	excluded  bool
}

func realRows(rows []nextRow) []nextRow {
	var out []nextRow
	for _, r := range rows {
		if !r.excluded {
			out = append(out, r)
		}
	}
	return out
}

// withExcluded adds to the job's next slots the dates its calendar
// excludes in between — one row per excluded local date, at its first
// slot after now (every later slot of that date is excluded too), at most
// scheduler.MaxNext — or, when the schedule has fewer than n slots left,
// the next n such dates.
func withExcluded(rows []nextRow, j *scheduler.JobSpec, now time.Time, n int) []nextRow {
	var until time.Time // the excluded dates listed end before it
	limit := n
	if len(rows) == n {
		until, limit = rows[len(rows)-1].slot, scheduler.MaxNext
	}
	var out []nextRow
	var last string
	for e := scheduler.NextExcluded(j.Schedule, now); !e.IsZero() && len(out) < limit; {
		if !until.IsZero() && e.After(until) {
			break
		}
		local := e.In(j.Location)
		if date := local.Format(time.DateOnly); date != last {
			out = append(out, nextRow{slot: e, excluded: true})
			last = date
		}
		// On from the next local date's start.
		y, m, d := local.Date()
		next := time.Date(y, m, d+1, 0, 0, 0, 0, j.Location)
		if !next.After(e) {
			next = e.Add(time.Hour) // a midnight that does not exist
		}
		e = scheduler.NextExcluded(j.Schedule, next.Add(-time.Second))
	}
	all := append(rows, out...)
	slices.SortStableFunc(all, func(a, b nextRow) int { return a.slot.Compare(b.slot) })
	return all
}
