//go:build linux

package e2e

import (
	"fmt"
	"sort"
	"time"

	"github.com/robfig/cron/v3"
)

// Check and the table of named checks it runs, the scenario they read,
// and the expected slots of a schedule.

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

// check is one of the checker's findings (the table of
// docs/guarantees.md, "Guarantees, tested"): run reads the scenario, adds to the report's counters
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
		for _, at := range s.slotsOf(in.Jobs, e, t) {
			s.evBySlot[keyOf(e.Job, at)] = append(s.evBySlot[keyOf(e.Job, at)], e)
		}
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

// slotsOf is the slots e accounts for: its slot t and, for a line that
// reports a run of late slots (missed > 1, first_slot), the slots of its
// job's schedule from first_slot to t — at most the last missed of them,
// should the schedule have changed meanwhile (a reload).
func (s *scenario) slotsOf(jobs []JobExpect, e Event, t time.Time) []time.Time {
	first, err := time.Parse(time.RFC3339, e.FirstSlot)
	if err != nil || !first.Before(t) || e.Missed < 2 {
		return []time.Time{t}
	}
	for _, j := range jobs {
		if j.Name != e.Job {
			continue
		}
		if slots, err := ExpectedSlots(j.Schedule, first, t); err == nil && len(slots) > 0 {
			return slots[max(len(slots)-e.Missed, 0):]
		}
	}
	return []time.Time{t}
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
