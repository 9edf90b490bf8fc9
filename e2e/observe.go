//go:build linux

package e2e

import (
	"path/filepath"
	"sort"
	"time"
)

// Reading the ledger and the replicas' logs, and judging them with the
// checker.

// Runs reads the ledger.
func (c *Cluster) Runs() []Run {
	c.t.Helper()
	runs, err := ReadLedger(c.ledger)
	if err != nil {
		c.t.Fatal(err)
	}
	return runs
}

// Events reads every replica's log.
func (c *Cluster) Events() []Event {
	c.t.Helper()
	paths, _ := filepath.Glob(filepath.Join(c.dir, "*.log"))
	sort.Strings(paths)
	evs, junk, err := ReadEvents(paths...)
	if err != nil {
		c.t.Fatal(err)
	}
	for i, j := range junk {
		if i == 5 {
			c.t.Logf("... %d more non-JSON log lines", len(junk)-5)
			break
		}
		c.t.Logf("non-JSON log line: %s", j)
	}
	return evs
}

// Input assembles the checker's input for expected slots in [from, to].
func (c *Cluster) Input(from, to time.Time) Input {
	var jobs []JobExpect
	for _, j := range c.spec.Jobs {
		if j.Calendar != "" {
			continue // its slots are the calendar's: its scenario checks them
		}
		jobs = append(jobs, JobExpect{Name: j.Name, Schedule: j.Schedule, Forbid: j.Forbid})
	}
	in := Input{Jobs: jobs, From: from, To: to, Skew: c.spec.Skew, Now: time.Now()}
	c.Faults.into(&in)
	c.mu.Lock()
	defer c.mu.Unlock()
	// A pause of the whole host longer than the lateness bound: every
	// replica frozen (hostpause.go).
	for _, p := range hostPauses(c.born, in.Now, c.spec.lateness()) {
		from := c.Faults.Start(p.From)
		in.Legit = append(in.Legit, Window{From: from, To: p.To, Why: p.String()})
		in.HostPauses = append(in.HostPauses, Window{From: from, To: p.To.Add(c.spec.lateness()), Why: p.String()})
		for _, name := range c.order {
			in.Freezes = append(in.Freezes, Freeze{Replica: name, From: p.From, To: p.To})
		}
	}
	return in
}

// Check stops every replica (SIGTERM), then runs the checker over slots in
// [from, to], logs the report and fails the test on any finding or on a
// replica that did not exit 0 within grace.
func (c *Cluster) Check(from, to time.Time) Report {
	c.t.Helper()
	c.StopAll()
	in := c.Input(from, to)
	in.Runs = c.Runs()
	in.Events = c.Events()
	r := Check(in)
	c.t.Logf("%s window %s..%s: %s", c.t.Name(), stamp(from), stamp(to), r)
	for _, w := range in.Legit {
		c.t.Logf("  fault window %s..%s: %s", stamp(w.From), stamp(w.To), w.Why)
	}
	if err := r.Err(); err != nil {
		c.t.Errorf("checker: %v", err)
	}
	c.mu.Lock()
	errs := c.exitErrs
	c.mu.Unlock()
	for _, e := range errs {
		c.t.Errorf("shutdown: %s", e)
	}
	return r
}

// EventsOf filters events by name (and job when job != "").
func EventsOf(evs []Event, event, job string) []Event {
	var out []Event
	for _, e := range evs {
		if e.Event == event && (job == "" || e.Job == job) {
			out = append(out, e)
		}
	}
	return out
}

// WaitOpenRun polls the ledger until a run of job (any job when "") has
// started and not ended on a replica that is running, and returns it.
func (c *Cluster) WaitOpenRun(job string, timeout time.Duration) Run {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		runs, err := ReadLedger(c.ledger)
		if err != nil {
			c.t.Fatal(err)
		}
		for i := len(runs) - 1; i >= 0; i-- {
			r := runs[i]
			if (job == "" || r.Job == job) && r.End.IsZero() {
				if rep := c.Replica(r.Replica); rep != nil && rep.Running() {
					return r
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatalf("no open run of %q within %v", job, timeout)
	return Run{}
}
