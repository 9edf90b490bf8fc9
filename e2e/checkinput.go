//go:build linux

package e2e

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The checker's inputs (what a scenario declares and what it observed)
// and its report (counts and findings).

// JobExpect is what the checker knows of one job: its schedule (parsed here
// with robfig/cron, independently of slotlock's own scheduler) and whether
// it forbids overlapping runs.
type JobExpect struct {
	Name     string
	Schedule string // 6 fields with seconds, evaluated in UTC
	Forbid   bool   // overlap: forbid
}

// Window is a span of slot times in which a fault makes a miss legitimate:
// slots in it may have no run, and need not be explained by the logs.
// Duplicates, overlaps and token order are checked everywhere.
type Window struct {
	From, To time.Time
	Why      string
}

func (w Window) contains(t time.Time) bool { return !t.Before(w.From) && !t.After(w.To) }

// Freeze records that a replica's whole process tree was stopped (SIGSTOP)
// from From to To (SIGCONT).
type Freeze struct {
	Replica  string
	From, To time.Time
}

// Kill records that a replica's process tree was killed with SIGKILL: its
// runs without an end line ended then.
type Kill struct {
	Replica string
	At      time.Time
}

// Input is one scenario's observations and declarations.
type Input struct {
	Jobs []JobExpect
	// From and To bound the expected slots (inclusive): every slot of every
	// job in [From, To] must run exactly once, unless a Legit window
	// contains it or, for a forbid job, a run was going on (skip "overlap").
	From, To time.Time
	Legit    []Window
	Freezes  []Freeze
	// HostPauses are the slots, by due time, of the whole host's pauses
	// and of the lateness bound after each: the slots fired late together
	// when it ended, whose runs may start out of token order (one replica
	// claims two slots of an every-second job at once and starts them a
	// few milliseconds apart, either first) — outside the conditions, as
	// the pause is.
	HostPauses []Window
	// Together are the slots, by due time, whose claims a resumed Redis
	// majority may answer at once (Cluster.ClaimsTogether): runs of an
	// overlap: allow job among them may start out of token order.
	Together []Window
	Kills    []Kill
	Runs     []Run
	Events   []Event
	// Skew is the largest clock difference between replicas (the
	// configured lock.max_clock_skew); it is the tolerance for matching an
	// "overlap" skip with the run that caused it.
	Skew time.Duration
	// CancelWithin bounds how long after a frozen replica wakes its stale
	// run may go on; an overlap past it is not excused. Default 2s.
	CancelWithin time.Duration
	// Now ends the observation: a run without an end line that was not
	// killed counts as running until Now.
	Now time.Time
}

// Report is the checker's verdict on one scenario.
type Report struct {
	Slots            int // expected slots in [From, To], all jobs
	Runs             int // runs in the ledger (distinct run ids), all slots
	Ran              int // expected slots that ran
	OverlapSkipped   int // expected slots of forbid jobs skipped while a run went on
	PausedSkipped    int // expected slots no replica ran because the job was paused (slotlock pause)
	GroupFullSkipped int // expected slots skipped group_full: every permit of the job's group was taken until the lateness bound
	Duplicates       int // extra runs of one slot
	Misses           int // expected slots without a run, outside legit windows
	MissesExcused    int // expected slots without a run inside legit windows
	Overlaps         int // pairs of intersecting runs of a forbid job, not excused
	ExcusedOverlaps  int // overlaps of a frozen replica's stale run (the later run has the higher token, stale run canceled soon after waking)
	TokenViolations  int // runs of a job, ordered by start, whose tokens do not strictly increase
	Unexplained      int // expected slots no log line accounts for, outside legit windows
	UnexplainedInGap int // the same inside legit windows (informational)
	LogMismatches    int // ledger runs without a matching run.started line (replica, run id, token, slot)

	Excused []string // the excused overlaps, for the scenario to inspect
	// Findings has one entry per check, in the order of checks: what it
	// counts against the scenario and its evidence.
	Findings []Finding
}

// Finding is what one named check reports.
type Finding struct {
	Check    string   // the check's name, as in docs/guarantees.md's table
	Failures int      // what it counts against the scenario
	Problems []string // the evidence, at most maxProblems lines
}

// maxProblems bounds the evidence lines of one check.
const maxProblems = 60

func (f *Finding) problem(format string, args ...any) { f.note(fmt.Sprintf(format, args...)) }

func (f *Finding) note(p string) {
	if len(f.Problems) < maxProblems {
		f.Problems = append(f.Problems, p)
	} else if len(f.Problems) == maxProblems {
		f.Problems = append(f.Problems, "... more problems not shown")
	}
}

// Failures counts every finding that fails a scenario.
func (r Report) Failures() int {
	n := 0
	for _, c := range checks {
		n += c.failures(r)
	}
	return n
}

// Err returns nil when the scenario holds, or an error listing the counts
// and, check by check, the evidence.
func (r Report) Err() error {
	if r.Failures() == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString(r.String())
	for _, f := range r.Findings {
		if f.Failures == 0 && len(f.Problems) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n  %s: %d", f.Check, f.Failures)
		for _, p := range f.Problems {
			b.WriteString("\n    " + p)
		}
	}
	return errors.New(b.String())
}

func (r Report) String() string {
	return fmt.Sprintf("slots=%d ran=%d overlap_skipped=%d paused_skipped=%d group_full_skipped=%d runs=%d duplicates=%d misses=%d (excused %d) overlaps=%d (excused %d) token_violations=%d unexplained=%d (in fault windows %d) log_mismatches=%d",
		r.Slots, r.Ran, r.OverlapSkipped, r.PausedSkipped, r.GroupFullSkipped, r.Runs, r.Duplicates, r.Misses, r.MissesExcused, r.Overlaps, r.ExcusedOverlaps,
		r.TokenViolations, r.Unexplained, r.UnexplainedInGap, r.LogMismatches)
}

// Add sums two reports (for a soak's total).
func (r *Report) Add(o Report) {
	r.Slots += o.Slots
	r.Runs += o.Runs
	r.Ran += o.Ran
	r.OverlapSkipped += o.OverlapSkipped
	r.PausedSkipped += o.PausedSkipped
	r.GroupFullSkipped += o.GroupFullSkipped
	r.Duplicates += o.Duplicates
	r.Misses += o.Misses
	r.MissesExcused += o.MissesExcused
	r.Overlaps += o.Overlaps
	r.ExcusedOverlaps += o.ExcusedOverlaps
	r.TokenViolations += o.TokenViolations
	r.Unexplained += o.Unexplained
	r.UnexplainedInGap += o.UnexplainedInGap
	r.LogMismatches += o.LogMismatches
	for _, of := range o.Findings {
		i := slices.IndexFunc(r.Findings, func(f Finding) bool { return f.Check == of.Check })
		if i < 0 {
			r.Findings = append(r.Findings, Finding{Check: of.Check})
			i = len(r.Findings) - 1
		}
		r.Findings[i].Failures += of.Failures
		for _, p := range of.Problems {
			r.Findings[i].note(p)
		}
	}
}
