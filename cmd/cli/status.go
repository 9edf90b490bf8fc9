package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"
)

// statusTimeout bounds the reads of `slotlock status` (one pause and one
// history read per job, 16 jobs at a time).
const statusTimeout = 30 * time.Second

func cmdStatus(ctx context.Context, args []string, env cmdEnv) int {
	f := newFlags("status", env)
	asJSON := f.Bool("json", false, "one JSON document on stdout")
	pos, err := f.parse(args)
	if err != nil {
		return exitConfig
	}
	if len(pos) > 1 {
		fmt.Fprintln(env.Stderr, "usage: slotlock status [--config FILE] [--json] [JOB]")
		return exitConfig
	}
	cfg, ok := loadStoreConfig(f, env)
	if !ok {
		return exitConfig
	}
	only := ""
	if len(pos) == 1 {
		only = pos[0]
	}
	r, code := startOnStores(ctx, "status", "the state", cfg, env)
	if r == nil {
		return code
	}
	defer r.close()
	rctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	jobs, known, err := statusJobs(rctx, r, env, only)
	if err == nil && !known {
		return exitConfig
	}
	hash := "" // no definitions loaded: none to compare the replicas' with
	if len(cfg.Jobs) > 0 {
		hash = cfg.DefinitionsHash()
	}
	var st history.Status
	if err == nil {
		st, err = history.ReadStatus(rctx, r.locker, jobs, hash, r.clock.Now())
	}
	if err != nil {
		r.log.Error("status: the lock stores did not answer", "error", err.Error())
		return exitFailure
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(st); err != nil {
			return exitFailure
		}
		return exitOK
	}
	if err := printStatus(env.Stdout, st, cfg.Lock.MaxClockSkew, len(cfg.Redis.Nodes)); err != nil {
		return exitFailure
	}
	return exitOK
}

// printStatus writes st as two tables: the jobs, then the replicas, and
// says when the replicas' clocks are further apart than skew
// (lock.max_clock_skew), which replica names processes alive at once
// share, which lock nodes are not independent, and when the count of them
// (nodes, in the configuration read) tolerates less than it seems.
func printStatus(w io.Writer, st history.Status, skew time.Duration, nodes int) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tSCHEDULE\tNEXT SLOT\tNEXT SLOT (UTC)\tPAUSED\tLAST OUTCOME\tRUNNING NOW")
	for _, j := range st.Jobs {
		name := j.Job
		if !j.Enabled {
			name += " (disabled)"
		}
		fmt.Fprintf(tw, "%s\t%s (%s)\t%s\t%s\t%s\t%s\t%s\n", name, j.Schedule, j.Timezone, dash(j.NextSlot),
			dash(j.NextSlotUTC), pausedText(j.Pause), lastText(j.Last), runningText(j.Running))
	}
	fmt.Fprintln(tw)
	fmt.Fprintf(tw, "REPLICA\tVERSION\tDEFINITIONS\tSTARTED\tLAST SEEN\tRUNNING\tCLOCK\n")
	for _, r := range st.Replicas {
		hash := dash(r.DefinitionsHash)
		if r.Differs {
			hash += " (differs from " + st.Hash + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", r.Replica, dash(r.Version), hash,
			r.Started.UTC().Format(time.RFC3339), r.Seen.UTC().Format(time.RFC3339), r.RunningCount, r.ClockText())
	}
	if len(st.Replicas) == 0 {
		fmt.Fprintln(tw, "(no replica alive)")
	}
	if fast, slow, apart := st.ClocksApart(); apart > skew {
		fmt.Fprintf(tw, "clocks: %s is %s ahead of %s, more than lock.max_clock_skew (%s): slots may run early or late; fix the hosts' time synchronisation\n",
			fast, apart, slow, skew)
	}
	for _, n := range st.SharedNames() {
		fmt.Fprintf(tw, "replicas: %s is the name of %d processes alive at once (instances %s): their lines, lock holders and heartbeats cannot be told apart; give each replica its own SLOTLOCK_REPLICA\n",
			n.Replica, len(n.Instances), strings.Join(n.Instances, ", "))
	}
	for _, n := range st.Nodes {
		fmt.Fprintf(tw, "nodes: %s\n", n.Text())
	}
	if warn := nodeCountWarning(nodes); warn != "" {
		fmt.Fprintf(tw, "nodes: %s\n", warn)
	}
	printControls(tw, st.Controls)
	return tw.Flush()
}

// printControls writes the control audit (trigger, pause, resume,
// backfill: who, what, when), newest first.
func printControls(tw *tabwriter.Writer, cs []history.Control) {
	if len(cs) == 0 {
		return
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "CONTROL	JOB	BY	AT	DETAIL")
	for _, c := range cs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Action, c.Job, c.Who(), c.At.UTC().Format(time.RFC3339), dash(c.Detail))
	}
}

func pausedText(p *history.PauseStatus) string {
	if p == nil {
		return "no"
	}
	s := "until resumed"
	if p.Until != nil {
		s = "until " + p.Until.Format(time.RFC3339)
	}
	if p.By != "" {
		s += " by " + p.By
	}
	if p.Reason != "" {
		s += ": " + p.Reason
	}
	return s
}

func lastText(e *history.Entry) string {
	if e == nil {
		return "-"
	}
	s := string(e.Outcome)
	if e.Reason != "" {
		s += " (" + string(e.Reason) + ")"
	}
	return s + " " + e.Slot
}

func runningText(runs []history.RunInfo) string {
	if len(runs) == 0 {
		return "-"
	}
	parts := make([]string, len(runs))
	for i, r := range runs {
		parts[i] = fmt.Sprintf("%s on %s (run %s, since %s, token %d)", r.Slot, r.Replica, r.RunID,
			r.Since.UTC().Format(time.RFC3339), r.Token)
	}
	return strings.Join(parts, "; ")
}
