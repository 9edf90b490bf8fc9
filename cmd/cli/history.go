package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"
)

// historyFilterRead is how many entries the command reads when it filters
// by outcome (the filter is applied to what it read).
const historyFilterRead = 10_000

func cmdHistory(ctx context.Context, args []string, env cmdEnv) int {
	f := newFlags("history", env)
	asJSON := f.Bool("json", false, "one JSON document on stdout")
	since := f.String("since", "", "only slots from then on: a duration back from now (24h) or an RFC 3339 time")
	limit := f.Int("limit", 100, "at most this many entries, newest first")
	outcome := f.String("outcome", "", "only this outcome ("+outcomeList()+")")
	cfg, job, ok := loadJobArg(f, args, env, "[--json] [--since DUR|TIME] [--limit N] [--outcome O] ")
	if !ok {
		return exitConfig
	}
	if *limit < 1 {
		fmt.Fprintln(env.Stderr, "slotlock history: --limit must be at least 1")
		return exitConfig
	}
	if *outcome != "" && !slices.Contains(history.Outcomes, history.Outcome(*outcome)) {
		fmt.Fprintf(env.Stderr, "slotlock history: --outcome %s: unknown outcome; want one of %s\n", quoteArg(*outcome), outcomeList())
		return exitConfig
	}
	// Judged before the stores are asked (the clock that places a
	// duration comes with them: parsed again below).
	if _, err := parseSince(*since, time.Now()); err != nil {
		fmt.Fprintf(env.Stderr, "slotlock history: --since: %v\n", err)
		return exitConfig
	}
	r, code := startOnStores(ctx, "history", "the history", cfg, env)
	if r == nil {
		return code
	}
	defer r.close()
	if _, _, code := fleetJob(ctx, r, env, "history", job); code != exitOK {
		return code
	}
	from, err := parseSince(*since, r.clock.Now())
	if err != nil {
		fmt.Fprintf(env.Stderr, "slotlock history: --since: %v\n", err)
		return exitConfig
	}
	read := *limit
	if *outcome != "" {
		read = max(read, historyFilterRead)
	}
	rctx, cancel := context.WithTimeout(ctx, pauseTimeout)
	defer cancel()
	entries, err := history.ReadEntries(rctx, r.locker, job, from, read)
	if err != nil {
		r.log.Error("history: the lock stores did not answer", "job", job, "error", err.Error())
		return exitFailure
	}
	fleet, err := history.ReadFleet(rctx, r.locker)
	if err != nil {
		r.log.Error("history: the lock stores did not answer", "job", job, "error", err.Error())
		return exitFailure
	}
	controls := fleet.ControlsOf(job, *limit)
	var out []history.Entry
	for _, e := range entries {
		if (*outcome == "" || e.Outcome == history.Outcome(*outcome)) && len(out) < *limit {
			out = append(out, e)
		}
	}
	if printHistory(env.Stdout, job, out, controls, *asJSON) != nil {
		return exitFailure
	}
	return exitOK
}

// printHistory writes a job's entries and control actions: one JSON
// document, or a table.
func printHistory(w io.Writer, job string, out []history.Entry, controls []history.Control, asJSON bool) error {
	if asJSON {
		doc := struct {
			Job      string            `json:"job"`
			Entries  []history.Entry   `json:"entries"`
			Controls []history.Control `json:"controls"`
		}{job, append([]history.Entry{}, out...), append([]history.Control{}, controls...)}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SLOT\tOUTCOME\tREASON\tREPLICA\tRUN ID\tTOKEN\tATTEMPTS\tDURATION\tERROR CLASS")
	for _, e := range out {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Slot, e.Outcome, reasonText(e), dash(e.Replica),
			dash(e.RunID), dashN(int64(e.Token)), dashN(int64(e.Attempts)),
			dashD(time.Duration(e.DurationMS)*time.Millisecond, e.Attempts), dash(e.ErrorClass))
	}
	printControls(tw, controls)
	return tw.Flush()
}

// outcomeList is the outcomes --outcome takes, comma-separated.
func outcomeList() string {
	s := make([]string, len(history.Outcomes))
	for i, o := range history.Outcomes {
		s[i] = string(o)
	}
	return strings.Join(s, ", ")
}

// parseSince reads --since: "" (everything), a duration back from now, or
// an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) { return history.ParseSince(s, now) }

// reasonText is an entry's reason for the table, one word: a missed
// slot whose run may have started says so (backfill refuses it).
func reasonText(e history.Entry) string {
	if e.MayHaveStarted {
		return dash(string(e.Reason)) + ",may_have_started"
	}
	return dash(string(e.Reason))
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func dashN(n int64) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

// dashD shows a run's duration, "-" for an entry without a run.
func dashD(d time.Duration, attempts int) string {
	if attempts == 0 {
		return "-"
	}
	return d.String()
}
