package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler"
	"github.com/slotlock/slotlock/scheduler/history"
)

// backfillTimeout bounds the reads that plan a backfill (the slot history
// and the open claims).
const backfillTimeout = 30 * time.Second

// cmdBackfill runs, one by one in this process under the normal locks,
// every slot of a job in [--from, --to] that has no recorded outcome
// (scheduler.PlanBackfill, scheduler.RunSlot). Exit 0: every slot of the
// window has an outcome — it ran and succeeded, or was refused because it
// ran, is running or may have run — or there was nothing to run; 1: a run
// failed, a slot was left without an outcome (runBackfill), or the stores
// did not answer; 2: a usage or configuration error, or a window it
// refuses.
func cmdBackfill(ctx context.Context, args []string, env cmdEnv) int {
	f := newFlags("backfill", env)
	fromS := f.String("from", "", "the window's start, RFC 3339 (required)")
	toS := f.String("to", "", "the window's end, RFC 3339, inclusive (required)")
	dryRun := f.Bool("dry-run", false, "list the slots it would run and why it skips the others; run nothing")
	cfg, job, ok := loadJobArg(f, args, env, "--from TIME --to TIME [--dry-run] ")
	if !ok {
		return exitConfig
	}
	from, err1 := parseTime("--from", *fromS)
	to, err2 := parseTime("--to", *toS)
	if err := errors.Join(err1, err2); err != nil {
		fmt.Fprintf(env.Stderr, "slotlock backfill: %v\n", err)
		return exitConfig
	}
	if len(cfg.Redis.Nodes) == 0 {
		fmt.Fprintln(env.Stderr, "slotlock backfill: needs redis.nodes: with in-process locks the slot history and the locks live in the replica")
		return exitConfig
	}
	if cfg.History.Keep == 0 {
		fmt.Fprintln(env.Stderr, "slotlock backfill: needs history.keep > 0: without the slot history a slot that ran cannot be told from one that did not")
		return exitConfig
	}
	r, code := start(ctx, "backfill", cfg, env)
	if r == nil {
		return code
	}
	defer r.close()
	if _, inConfig, code := fleetJob(ctx, r, env, "backfill", job); code != exitOK {
		return code
	} else if !inConfig {
		// Backfill runs the job's body in this process; the fleet
		// publishes names and schedules, never bodies.
		fmt.Fprintf(env.Stderr, "slotlock backfill: job %s is run by the fleet but not defined in this configuration: "+
			"backfill runs the job in this process, so it needs the job's definition (its plugin and params) in the configuration; "+
			"for a job embedded in a service, backfill from that service (scheduler.PlanBackfill and RunSlot)\n", quoteArg(job))
		return exitConfig
	}
	pctx, cancel := context.WithTimeout(ctx, backfillTimeout)
	plan, err := r.sched.PlanBackfill(pctx, job, from, to)
	cancel()
	switch {
	case errors.Is(err, scheduler.ErrBackfillWindow) || errors.Is(err, scheduler.ErrNoHistory):
		fmt.Fprintf(env.Stderr, "slotlock backfill: %v\n", err)
		return exitConfig
	case err != nil:
		r.log.Error("backfill: the lock stores did not answer", "job", job, "error", err.Error())
		return exitFailure
	}
	results := make([]string, len(plan))
	why := make([]string, len(plan))
	toRun := 0
	for i, b := range plan {
		results[i], why[i] = "skip", refusal(b.Why, b.Entry)
		if b.Run {
			results[i] = "run"
			toRun++
		}
	}
	if *dryRun || toRun == 0 {
		if err := printBackfill(env.Stdout, plan, results, why, "ACTION"); err != nil {
			return exitFailure
		}
		fmt.Fprintf(env.Stdout, "%d to run, %d skipped\n", toRun, len(plan)-toRun)
		return exitOK
	}

	if recordControl(ctx, r, env, history.ControlBackfill, job,
		fmt.Sprintf("%s to %s: %d slots to run", slotText(from), slotText(to), toRun), nil) != nil {
		return exitFailure
	}
	ran, code := runBackfill(ctx, r, job, plan, results, why)
	if err := printBackfill(env.Stdout, plan, results, why, "RESULT"); err != nil {
		return exitFailure
	}
	fmt.Fprintf(env.Stdout, "%d of %d run\n", ran, toRun)
	return code
}

// heldBudget is how long in all a backfill keeps coming back to slots it
// could not lock because another run held the job lease (or a claim of
// the slot was still being settled): long enough for a replica's run of a
// live schedule and another backfill of the same window to let it in,
// short enough that a job whose runs outlast it is reported rather than
// waited for indefinitely.
func heldBudget(ttl time.Duration) time.Duration { return max(time.Minute, 4*ttl) }

// runBackfill runs the planned slots oldest first, filling in each one's
// result and why, and returns how many ran and the exit code. A run that
// did not succeed is an outcome like any (the table and the error line
// say so); only a slot left without one fails the command. A slot whose
// job lease another run
// holds (a replica's, another backfill's: RunSlot waits half a lock.ttl
// for it, and a run that takes the lease back at once can outpace that
// wait) is set aside and the next slots go on; the set-aside slots are
// tried again, in rounds, until each has an outcome or heldBudget has
// passed since the first was set aside — meanwhile whoever held the lease
// ran them, or let go of it. A slot that could not be locked for another
// reason (no quorum, the job paused) stops the backfill: the next slots
// would meet the same. Every slot left without an outcome is named, with
// why, and fails the command.
func runBackfill(ctx context.Context, r *replica, job string, plan []scheduler.BackfillSlot, results, why []string) (ran, code int) {
	code = exitOK
	var stopped bool
	var held []int // plan indexes set aside: the job lease was held
	var heldSince time.Time
	try := func(i int) {
		slot := plan[i].Slot
		if stopped {
			results[i], why[i] = "not run", "backfill stopped earlier"
			return
		}
		if ctx.Err() != nil {
			stopped, code = true, exitFailure
			results[i], why[i] = "not run", "interrupted"
			return
		}
		h, err := r.sched.RunSlot(ctx, job, slot)
		var he *scheduler.HandledError
		switch {
		case err == nil, errors.Is(err, scheduler.ErrRunFailed):
			// Ran: the slot has its outcome, succeeded or not (failed,
			// canceled): the window is done with it. The exit code speaks
			// of slots left without one.
			ran++
			results[i], why[i] = string(h.Outcome), describeRun(h)
			if err != nil {
				r.log.Error("backfill: run did not succeed", "job", job, "slot", slotText(slot), "error", err.Error())
			}
		case errors.As(err, &he):
			// Handled since the plan was made (by a replica, or another
			// backfill): nothing to do for it.
			results[i], why[i] = "skipped", refusal(he.Reason, he.Entry)
		case ctx.Err() == nil && errors.Is(err, locking.ErrNotAcquired):
			if heldSince.IsZero() {
				heldSince = time.Now()
			}
			held = append(held, i)
			results[i], why[i] = "not run", heldWhy(err)
		default:
			// No quorum, the job paused: the next slots would meet the
			// same; stop here.
			stopped, code = true, exitFailure
			results[i], why[i] = "not run", lockWhy(err)
			r.log.Error("backfill: slot not run: could not lock it; stopping", "job", job, "slot", slotText(slot),
				"error", err.Error())
		}
	}
	for i, b := range plan {
		if !b.Run {
			results[i] = "skipped"
			continue
		}
		try(i)
	}
	budget := heldBudget(r.cfg.Lock.TTL)
	for len(held) > 0 && !stopped && time.Since(heldSince) < budget {
		again := held
		held = nil
		for _, i := range again {
			try(i)
		}
		if len(held) == len(again) {
			// No slot got an outcome this round: pause before the next
			// rather than ask at the holder's pace.
			select {
			case <-ctx.Done():
			case <-time.After(r.cfg.Lock.TTL / 4):
			}
		}
	}
	for _, i := range held {
		code = exitFailure
		if !stopped {
			why[i] += fmt.Sprintf(" for %s in all", budget)
		}
		r.log.Error("backfill: slot not run: its job lease stayed held", "job", job, "slot", slotText(plan[i].Slot),
			"why", why[i])
	}
	return ran, code
}

// lockWhy says why a slot could not be locked, for the table.
func lockWhy(err error) string {
	switch {
	case errors.Is(err, locking.ErrPaused):
		return "could not lock: the job is paused"
	case errors.Is(err, locking.ErrNoQuorum):
		return "could not lock: no quorum"
	}
	return "could not lock"
}

// heldWhy says what a slot could not be locked for: the job lease held
// (by whom, when known), or another claim of the slot still on some of
// the stores (a concurrent claim being handed back).
func heldWhy(err error) string {
	var he *locking.HeldError
	switch {
	case errors.As(err, &he) && he.Holder != "":
		return "job lease held by " + he.Holder
	case errors.As(err, &he):
		return "job lease held"
	}
	return "another claim of the slot held"
}

// parseTime reads a --from or --to flag: a required RFC 3339 time.
func parseTime(flag, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, fmt.Errorf("%s is required (RFC 3339, e.g. 2026-11-29T10:00:00Z)", flag)
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s %q: want an RFC 3339 time, e.g. 2026-11-29T10:00:00Z", flag, v)
	}
	if err := history.CheckTime(t); err != nil {
		return time.Time{}, fmt.Errorf("%s %q: %w", flag, v, err)
	}
	return t, nil
}

func slotText(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// refusal says why a slot is not run and, when the slot history decided
// it, which entry did: what it says of the body and who wrote it — the
// join of the slot's entries (history.Join), so an operator sees the
// evidence a refusal stands on.
func refusal(why string, e *history.Entry) string {
	if e == nil {
		return why
	}
	why += " — " + e.Evidence().String()
	if src := e.Source(); src != "" {
		why += "; entry of " + src
	}
	return why
}

// describeRun sums up a backfilled run for the table.
func describeRun(h history.Entry) string {
	s := fmt.Sprintf("run %s, token %d, %d attempt(s), %s", h.RunID, h.Token, h.Attempts,
		(time.Duration(h.DurationMS) * time.Millisecond).String())
	if h.ErrorClass != "" {
		s += ", error class " + h.ErrorClass
	}
	if h.Reason != "" {
		s += ", " + string(h.Reason)
	}
	return s
}

// printBackfill writes the window's slots as a table: slot, what was (or
// would be) done, why.
func printBackfill(w io.Writer, plan []scheduler.BackfillSlot, results, why []string, col string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "SLOT\t%s\tWHY\n", col)
	for i, b := range plan {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", slotText(b.Slot), results[i], why[i])
	}
	return tw.Flush()
}
