//go:build linux

package e2e

import (
	"sync"
	"time"
)

// Faults a scenario injects into replicas, and the fault windows it
// declares: what the checker must know of them (Cluster.Faults).

// FaultRecord is what a scenario's faults leave for the checker: the
// replicas killed and frozen (recorded by Replica.Kill and Freeze), and
// the windows it declares (Legit, ClaimsTogether). Safe for concurrent use.
type FaultRecord struct {
	lateness time.Duration // the cluster's lateness bound (Start)

	mu       sync.Mutex
	kills    []Kill
	freezes  []Freeze
	legit    []Window
	together []Window
}

// Kill SIGKILLs the replica and its jobs, and records the kill as of
// when the replica is gone: a run of a job that wrote its start line
// while the signal was on its way, after the kill began, was still ended
// by it (the checker ends a run without an end line at the first kill of
// its replica after its start; timed before the signal, such a run ran
// on to the check's end, over every later run).
func (r *Replica) Kill() {
	r.p.kill()
	at := time.Now()
	r.c.Faults.record(func(f *FaultRecord) { f.kills = append(f.kills, Kill{Replica: r.Name, At: at}) })
}

// Freeze SIGSTOPs the replica's process group and its jobs for d, then
// continues them, and records the freeze. It blocks for d.
func (r *Replica) Freeze(d time.Duration) Freeze {
	return r.FreezeUntil(d, d, func() bool { return true })
}

// FreezeUntil is Freeze for at least least, and then until cond holds
// (polled every 100 ms) or most has passed since the freeze began: for a
// scenario that needs something to happen elsewhere while the replica is
// frozen, however slow a loaded host makes it.
func (r *Replica) FreezeUntil(least, most time.Duration, cond func() bool) Freeze {
	f := Freeze{Replica: r.Name, From: time.Now()}
	r.p.freeze()
	time.Sleep(least)
	for deadline := f.From.Add(most); !cond() && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	r.p.thaw()
	f.To = time.Now()
	r.c.Faults.record(func(rec *FaultRecord) { rec.freezes = append(rec.freezes, f) })
	return f
}

// Start is where a fault window opens for a fault injected at t: a
// slot that fired up to the lateness bound earlier may still be in its
// acquisition (retrying a missing quorum, or a forbid job's lease, while
// the slot is fresh) on the replica or nodes the fault hits, plus half a
// second of margin.
func (f *FaultRecord) Start(t time.Time) time.Time {
	return t.Add(-(f.lateness + 500*time.Millisecond))
}

// Legit declares that slots in [from, to] may legitimately be missed.
func (f *FaultRecord) Legit(from, to time.Time, why string) {
	f.record(func(f *FaultRecord) { f.legit = append(f.legit, Window{From: from, To: to, Why: why}) })
}

// ClaimsTogether declares that the claims of slots due in [from, to] may
// be answered together: a frozen Redis majority that resumes runs the
// claims queued on it and the replicas' retries at once, and two runs of
// an overlap: allow job may then start a few milliseconds out of token
// order — a documented limit (docs/guarantees.md, "Token order of
// acquisitions that overlap"). Runs of forbid jobs are never excused.
func (f *FaultRecord) ClaimsTogether(from, to time.Time, why string) {
	f.record(func(f *FaultRecord) { f.together = append(f.together, Window{From: from, To: to, Why: why}) })
}

// record adds to the record under its lock.
func (f *FaultRecord) record(add func(*FaultRecord)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	add(f)
}

// Kills is a copy of the kills recorded so far.
func (f *FaultRecord) Kills() []Kill {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Kill(nil), f.kills...)
}

// into copies what is recorded into the checker's input.
func (f *FaultRecord) into(in *Input) {
	f.mu.Lock()
	defer f.mu.Unlock()
	in.Legit = append([]Window(nil), f.legit...)
	in.Together = append([]Window(nil), f.together...)
	in.Freezes = append([]Freeze(nil), f.freezes...)
	in.Kills = append([]Kill(nil), f.kills...)
}

// StallLogs stops draining the replica's output for d (Spec.PipedLogs),
// so that its writes block as under a log driver's backpressure, and
// records the stall. It blocks for d.
func (r *Replica) StallLogs(d time.Duration) Stall {
	if r.logs == nil {
		r.c.t.Fatalf("replica %s: StallLogs needs Spec.PipedLogs", r.Name)
	}
	s := Stall{Replica: r.Name, From: time.Now()}
	r.logs.stall(d)
	s.To = time.Now()
	return s
}

// Stall is a span in which a replica's log writes blocked.
type Stall struct {
	Replica  string
	From, To time.Time
}

// Throttle lets the replica (and its jobs' processes) run for on out of
// every on+off, for d, as a CPU quota does: a container limited to a
// fraction of a core is stopped whole by the kernel for the rest of each
// scheduling period once its quota is spent (CFS throttling; 100 ms
// periods by default). It blocks for d and leaves the replica running.
func (r *Replica) Throttle(d, on, off time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
		r.p.freeze()
		time.Sleep(off)
		r.p.thaw()
		time.Sleep(on)
	}
}
