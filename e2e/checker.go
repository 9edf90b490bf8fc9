//go:build linux

package e2e

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

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
	Check    string   // the check's name, as in the README's table
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
	return fmt.Sprintf("slots=%d ran=%d overlap_skipped=%d runs=%d duplicates=%d misses=%d (excused %d) overlaps=%d (excused %d) token_violations=%d unexplained=%d (in fault windows %d) log_mismatches=%d",
		r.Slots, r.Ran, r.OverlapSkipped, r.Runs, r.Duplicates, r.Misses, r.MissesExcused, r.Overlaps, r.ExcusedOverlaps,
		r.TokenViolations, r.Unexplained, r.UnexplainedInGap, r.LogMismatches)
}

// Add sums two reports (for a soak's total).
func (r *Report) Add(o Report) {
	r.Slots += o.Slots
	r.Runs += o.Runs
	r.Ran += o.Ran
	r.OverlapSkipped += o.OverlapSkipped
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

var cronParser = cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ExpectedSlots returns the slots of a 6-field UTC schedule in [from, to].
func ExpectedSlots(spec string, from, to time.Time) ([]time.Time, error) {
	s, err := cronParser.Parse("CRON_TZ=UTC " + spec)
	if err != nil {
		return nil, fmt.Errorf("e2e: schedule %q: %w", spec, err)
	}
	var out []time.Time
	for t := s.Next(from.Add(-time.Nanosecond)); !t.After(to); t = s.Next(t) {
		out = append(out, t.UTC())
	}
	return out, nil
}

type slotKey struct {
	job  string
	slot int64 // unix seconds
}

func keyOf(job string, t time.Time) slotKey { return slotKey{job, t.Unix()} }

// check is one of the checker's findings (the README's "Guarantees,
// tested" table): run reads the scenario, adds to the report's counters
// and writes its evidence into its own Finding; failures is the part of
// the report that fails the scenario.
type check struct {
	name     string
	run      func(s *scenario, r *Report, f *Finding)
	failures func(r Report) int
}

var checks = []check{
	{"duplicates", checkDuplicates, func(r Report) int { return r.Duplicates }},
	{"misses", checkMisses, func(r Report) int { return r.Misses }},
	{"overlaps", checkOverlaps, func(r Report) int { return r.Overlaps }},
	{"fencing-token violations", checkTokens, func(r Report) int { return r.TokenViolations }},
	{"unexplained slots", checkExplained, func(r Report) int { return r.Unexplained }},
	{"ledger/log mismatches", checkLedgerLog, func(r Report) int { return r.LogMismatches }},
}

// Check judges one scenario. It never looks at slotlock's code: only at the
// ledger the jobs wrote, the replicas' audit logs, and what the harness
// declares it did. Every check runs; each reports its own failures.
func Check(in Input) Report {
	s := newScenario(in)
	r := Report{Slots: len(s.expected), Runs: len(s.Runs)}
	for _, c := range checks {
		f := Finding{Check: c.name}
		c.run(s, &r, &f)
		f.Failures = c.failures(r)
		r.Findings = append(r.Findings, f)
	}
	return r
}

// scenario is what the checks read: the input with its defaults, each run
// starting at its earliest evidence, and the indexes the checks share.
type scenario struct {
	Input
	bySlot   map[slotKey][]Run   // scheduled (not manual) runs by slot
	byJob    map[string][]Run    // runs by job, ordered by start
	jobs     []string            // the keys of byJob, sorted
	forbid   map[string]bool     // jobs with overlap: forbid
	evBySlot map[slotKey][]Event // log lines by slot, manual runs and unparsable slots left out
	badSlots []Event             // log lines with a slot that does not parse
	started  map[string][]Event  // run.started lines by job and run id
	expected []expectedSlot      // every job's slots in [From, To]
	schedErr []error             // schedules the checker cannot parse
}

type expectedSlot struct {
	job   JobExpect
	slot  time.Time
	legit bool // inside a declared fault window
}

func newScenario(in Input) *scenario {
	if in.CancelWithin == 0 {
		in.CancelWithin = 2 * time.Second
	}
	if in.Now.IsZero() {
		in.Now = time.Now()
	}
	// A run starts when slotlock started it (its run.started line) or when
	// the job first wrote, whichever is earlier: a job process forked just
	// before its replica was frozen writes its first line only after the
	// replica wakes, but its run, lease and token date from before.
	logStart := map[string]time.Time{}
	for _, e := range in.Events {
		if e.Event != "run.started" || e.Time.IsZero() {
			continue
		}
		k := e.Job + "\x00" + e.RunID + "\x00" + e.Replica
		if t, ok := logStart[k]; !ok || e.Time.Before(t) {
			logStart[k] = e.Time
		}
	}
	runs := make([]Run, len(in.Runs))
	for i, run := range in.Runs {
		if t, ok := logStart[run.Job+"\x00"+run.RunID+"\x00"+run.Replica]; ok && t.Before(run.Start) {
			run.Start = t
		}
		runs[i] = run
	}
	in.Runs = runs

	s := &scenario{
		Input:    in,
		bySlot:   map[slotKey][]Run{},
		byJob:    map[string][]Run{},
		forbid:   map[string]bool{},
		evBySlot: map[slotKey][]Event{},
		started:  map[string][]Event{},
	}
	for _, run := range in.Runs {
		s.byJob[run.Job] = append(s.byJob[run.Job], run)
		if !run.Manual {
			k := keyOf(run.Job, run.Slot)
			s.bySlot[k] = append(s.bySlot[k], run)
		}
	}
	for job, runs := range s.byJob {
		// Sorted by start (ParseLedger); keep it so.
		sort.SliceStable(runs, func(a, b int) bool { return runs[a].Start.Before(runs[b].Start) })
		s.jobs = append(s.jobs, job)
	}
	sort.Strings(s.jobs)
	for _, e := range in.Events {
		if e.Job == "" || e.Slot == "" || e.Slot == "manual" {
			continue
		}
		t, err := time.Parse(time.RFC3339, e.Slot)
		if err != nil {
			s.badSlots = append(s.badSlots, e)
			continue
		}
		s.evBySlot[keyOf(e.Job, t)] = append(s.evBySlot[keyOf(e.Job, t)], e)
		if e.Event == "run.started" {
			s.started[e.Job+"\x00"+e.RunID] = append(s.started[e.Job+"\x00"+e.RunID], e)
		}
	}
	for _, j := range in.Jobs {
		s.forbid[j.Name] = j.Forbid
		slots, err := ExpectedSlots(j.Schedule, in.From, in.To)
		if err != nil {
			s.schedErr = append(s.schedErr, err)
			continue
		}
		for _, t := range slots {
			s.expected = append(s.expected, expectedSlot{job: j, slot: t, legit: s.inLegit(t)})
		}
	}
	return s
}

func (s *scenario) inLegit(t time.Time) bool {
	for _, w := range s.Legit {
		if w.contains(t) {
			return true
		}
	}
	return false
}

// end is when a run ended: its end line, else the first kill of its
// replica after it started, else now.
func (s *scenario) end(run Run) time.Time { return runEnd(run, s.Kills, s.Now) }

// sortedKeys returns the keys of a by-slot map, by job then slot.
func sortedKeys[V any](m map[slotKey]V) []slotKey {
	keys := make([]slotKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].job != keys[j].job {
			return keys[i].job < keys[j].job
		}
		return keys[i].slot < keys[j].slot
	})
	return keys
}

// checkDuplicates: a slot with more than one run, in the ledger or in the
// run.started lines, or a run id started as attempt 1 more than once.
func checkDuplicates(s *scenario, r *Report, f *Finding) {
	for _, run := range s.Runs {
		if run.FirstAttempts > 1 {
			r.Duplicates += run.FirstAttempts - 1
			f.problem("duplicate: run %s of %s slot %s started attempt 1 %d times", run.RunID, run.Job, slotString(run), run.FirstAttempts)
		}
	}
	for _, k := range sortedKeys(s.bySlot) {
		runs := s.bySlot[k]
		if len(runs) > 1 {
			r.Duplicates += len(runs) - 1
			var ev []string
			for _, run := range runs {
				ev = append(ev, fmt.Sprintf("%s token=%d run_id=%s start=%s", run.Replica, run.Token, run.RunID, stamp(run.Start)))
			}
			f.problem("duplicate: %s slot %s ran %d times: %s", k.job, time.Unix(k.slot, 0).UTC().Format(time.RFC3339), len(runs), strings.Join(ev, "; "))
		}
	}
	// Runs the logs claim but the ledger lacks (a job killed before it
	// wrote) still count.
	for _, k := range sortedKeys(s.evBySlot) {
		ids := map[string]bool{}
		for _, run := range s.bySlot[k] {
			ids[run.RunID] = true
		}
		var extra []string
		for _, e := range s.evBySlot[k] {
			if e.Event == "run.started" && !ids[e.RunID] {
				ids[e.RunID] = true
				extra = append(extra, fmt.Sprintf("%s run_id=%s token=%d (log only)", e.Replica, e.RunID, e.Token))
			}
		}
		if len(extra) > 0 && len(ids) > 1 {
			r.Duplicates += len(extra)
			if len(s.bySlot[k]) == 0 {
				r.Duplicates-- // the first log-only run is the slot's one run
			}
			f.problem("duplicate: %s slot %s has %d run ids in run.started lines: %s", k.job,
				time.Unix(k.slot, 0).UTC().Format(time.RFC3339), len(ids), strings.Join(extra, "; "))
		}
	}
}

// checkMisses: an expected slot with no run, outside the fault windows,
// unless a forbid job's slot was skipped for overlap while a run of the
// job really went on. It also counts the slots that ran, were skipped for
// overlap, or were not run inside a fault window.
func checkMisses(s *scenario, r *Report, f *Finding) {
	for _, err := range s.schedErr {
		r.Misses++
		f.problem("%v", err)
	}
	for _, x := range s.expected {
		k := keyOf(x.job.Name, x.slot)
		switch {
		case len(s.bySlot[k]) > 0:
			r.Ran++
		case x.legit:
			r.MissesExcused++
		case x.job.Forbid && overlapSkipJustified(s.evBySlot[k], s.byJob[x.job.Name], x.slot, s.Skew, s.end):
			r.OverlapSkipped++
		default:
			r.Misses++
			f.problem("miss: %s slot %s did not run; log: %s", x.job.Name, x.slot.Format(time.RFC3339), describe(s.evBySlot[k]))
		}
	}
}

// checkOverlaps: two runs of a forbid job whose [start, end] intersect,
// unless the contract excuses it (excusedOverlap).
func checkOverlaps(s *scenario, r *Report, f *Finding) {
	for _, job := range s.jobs {
		if !s.forbid[job] {
			continue
		}
		runs := s.byJob[job]
		for i := range runs {
			ea := s.end(runs[i])
			for k := i + 1; k < len(runs); k++ {
				a, b := runs[i], runs[k]
				if !b.Start.Before(ea) { // b starts after a ended
					continue
				}
				if why, ok := excusedOverlap(a, ea, b, s.Freezes, s.CancelWithin); ok {
					r.ExcusedOverlaps++
					r.Excused = append(r.Excused, fmt.Sprintf("%s: run %s (%s, token %d) overlapped run %s (%s, token %d): %s",
						job, a.RunID, a.Replica, a.Token, b.RunID, b.Replica, b.Token, why))
					continue
				}
				r.Overlaps++
				f.problem("overlap: %s run %s (%s, slot %s, token %d, %s..%s) and run %s (%s, slot %s, token %d, start %s)",
					job, a.RunID, a.Replica, slotString(a), a.Token, stamp(a.Start), endString(a, ea),
					b.RunID, b.Replica, slotString(b), b.Token, stamp(b.Start))
			}
		}
	}
}

// checkTokens: per job, runs ordered by start must have strictly
// increasing tokens, and the attempts of a run must agree on token, slot
// and replica.
func checkTokens(s *scenario, r *Report, f *Finding) {
	for _, run := range s.Runs {
		if run.Inconsistent != "" {
			r.TokenViolations++
			f.problem("inconsistent attempts: %s", run.Inconsistent)
		}
	}
	for _, job := range s.jobs {
		runs := s.byJob[job]
		for i := 1; i < len(runs); i++ {
			a, b := runs[i-1], runs[i]
			if b.Token <= a.Token {
				r.TokenViolations++
				f.problem("token order: %s run %s (%s, slot %s, start %s) token %d after run %s (%s, slot %s, start %s) token %d",
					job, b.RunID, b.Replica, slotString(b), stamp(b.Start), b.Token,
					a.RunID, a.Replica, slotString(a), stamp(a.Start), a.Token)
			}
		}
	}
}

// checkExplained: every expected slot has a log line that accounts for
// it — a run.started, a run.abandoned, a slot.skipped with an explaining
// reason or, inside a fault window, a slot.acquired by the replica the
// fault then stopped.
func checkExplained(s *scenario, r *Report, f *Finding) {
	for _, x := range s.expected {
		evs := s.evBySlot[keyOf(x.job.Name, x.slot)]
		explained := false
		for _, e := range evs {
			switch {
			case e.Event == "run.started" || e.Event == "run.abandoned":
				explained = true
			case e.Event == "slot.skipped" && explainingSkips[e.Reason]:
				explained = true
			case e.Event == "slot.acquired" && x.legit:
				// Won by a replica that a fault then stopped.
				explained = true
			}
		}
		switch {
		case explained:
		case x.legit:
			r.UnexplainedInGap++
		default:
			r.Unexplained++
			f.problem("unexplained: %s slot %s: no run.started, no run.abandoned, no slot.skipped that explains it; log: %s",
				x.job.Name, x.slot.Format(time.RFC3339), describe(evs))
		}
	}
}

// checkLedgerLog: every scheduled run in the ledger has a run.started line
// with the same replica, run id, token and slot, and every log line's slot
// parses.
func checkLedgerLog(s *scenario, r *Report, f *Finding) {
	for _, e := range s.badSlots {
		r.LogMismatches++
		f.problem("log line with a bad slot %q: %s %s", e.Slot, e.Replica, e.Event)
	}
	for _, run := range s.Runs {
		if run.Manual {
			continue
		}
		ok := false
		for _, e := range s.started[run.Job+"\x00"+run.RunID] {
			if e.Replica == run.Replica && e.Token == run.Token && e.Slot == run.Slot.Format(time.RFC3339) {
				ok = true
			}
		}
		if !ok {
			r.LogMismatches++
			f.problem("log mismatch: ledger run %s of %s slot %s on %s token %d has no run.started line with that replica, token and slot",
				run.RunID, run.Job, slotString(run), run.Replica, run.Token)
		}
	}
}

// runEnd is a run's end line, else the first kill of its replica after it
// started, else now.
func runEnd(run Run, kills []Kill, now time.Time) time.Time {
	if !run.End.IsZero() {
		return run.End
	}
	best := now
	for _, k := range kills {
		if k.Replica == run.Replica && !k.At.Before(run.Start) && k.At.Before(best) {
			best = k.At
		}
	}
	return best
}

// quickEnd is how soon after waking a stale run that was not canceled may
// end and still count as "stopped as soon as it woke".
const quickEnd = 250 * time.Millisecond

// excusedOverlap: the earlier run a belongs to a replica that was frozen
// while a ran and before b started (so a's lease could expire), b has the
// higher token, and a was canceled within cancelWithin of the replica
// waking (or ended by itself within quickEnd of it).
func excusedOverlap(a Run, ea time.Time, b Run, freezes []Freeze, cancelWithin time.Duration) (string, bool) {
	if b.Token <= a.Token {
		return "", false
	}
	for _, f := range freezes {
		if f.Replica != a.Replica {
			continue
		}
		if f.From.Before(a.Start) || f.From.After(b.Start) || f.From.After(ea) {
			continue
		}
		if ea.After(f.To.Add(cancelWithin)) {
			continue
		}
		// It must have been canceled on waking, or have ended by itself
		// at once (its job had finished its work while frozen).
		if a.Outcome != "canceled" && ea.After(f.To.Add(quickEnd)) {
			continue
		}
		return fmt.Sprintf("%s frozen %s..%s", f.Replica, stamp(f.From), stamp(f.To)), true
	}
	return "", false
}

// explainingSkips are the slot.skipped reasons that account for a slot no
// replica ran (held and done point at another replica that did).
var explainingSkips = map[string]bool{
	"overlap": true, "late": true, "no_quorum": true, "slow_lock": true, "shutdown": true, "claimed": true,
}

// overlapSkipJustified: some replica skipped the slot with reason overlap,
// and a run of the job was going on around the slot's time (within skew
// and half a second, for process start and lease release).
func overlapSkipJustified(evs []Event, runs []Run, slot time.Time, skew time.Duration, end func(Run) time.Time) bool {
	skipped := false
	for _, e := range evs {
		if e.Event == "slot.skipped" && e.Reason == "overlap" {
			skipped = true
		}
	}
	if !skipped {
		return false
	}
	tol := skew + 500*time.Millisecond
	for _, run := range runs {
		if !run.Start.After(slot.Add(tol)) && !end(run).Before(slot.Add(-tol)) {
			return true
		}
	}
	return false
}

// RunsStartedIn returns the runs whose first start lies in [from, to].
func RunsStartedIn(runs []Run, from, to time.Time) []Run {
	var out []Run
	for _, r := range runs {
		if !r.Start.Before(from) && !r.Start.After(to) {
			out = append(out, r)
		}
	}
	return out
}

func describe(evs []Event) string {
	if len(evs) == 0 {
		return "(nothing)"
	}
	var parts []string
	for _, e := range evs {
		s := e.Replica + " " + e.Event
		if e.Reason != "" {
			s += " reason=" + e.Reason
		}
		if e.Holder != "" {
			s += " holder=" + e.Holder
		}
		if e.Error != "" {
			s += " error=" + e.Error
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func slotString(r Run) string {
	if r.Manual {
		return "manual"
	}
	return r.Slot.Format(time.RFC3339)
}

func stamp(t time.Time) string { return t.UTC().Format("15:04:05.000") }

func endString(r Run, e time.Time) string {
	if r.End.IsZero() {
		return stamp(e) + "(no end line)"
	}
	return stamp(e)
}
