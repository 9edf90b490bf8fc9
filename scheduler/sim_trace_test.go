package scheduler_test

import (
	"flag"
	"fmt"
	"slices"
	"testing"
	"time"
)

var simReplayHours = flag.Float64("sim.replayhours", simDefaultReplayHours, "simulated hours of each replay in TestSimulationReplaysItsSeed (3; 1 under the race detector: sim_span_race_test.go)")

// traceLines is what a simulation did, one event a line: every run
// started and ended (job, slot, replica, process, run id, token), every
// audit event the replicas logged, every fault injected and healed, with
// its virtual time since the start. Events of one virtual instant have no
// order between them (the goroutines that wrote them ran "at once"), so
// the lines are sorted by time and then by text: two replays of a seed
// give the same lines when they did the same things at the same instants.
func (w *world) traceLines() []string {
	type line struct {
		at   time.Duration
		text string
	}
	var ls []line
	add := func(at time.Time, format string, args ...any) {
		ls = append(ls, line{at.Sub(w.start), fmt.Sprintf(format, args...)})
	}
	w.rec.mu.Lock()
	for _, r := range w.rec.runs {
		add(r.start, "run.start %s %s %s(%s) run=%s token=%d", r.job, r.slot, r.replica, r.inst.name, r.runID, r.token)
		if !r.end.IsZero() {
			add(r.end, "run.end %s %s %s(%s) run=%s", r.job, r.slot, r.replica, r.inst.name, r.runID)
		}
	}
	for _, a := range w.rec.audits {
		add(a.at, "%s %s %s %s(%s) reason=%s run=%s holder=%s first=%s by=%s missed=%d may_have_started=%v token=%d level=%v err=%q",
			a.event, a.job, a.slot, a.replica, a.inst.name, a.reason, a.runID, a.holder, a.firstSlot, a.bySlot,
			a.missed, a.mayHaveStarted, a.tokenAttr, a.level, a.errText)
	}
	w.rec.mu.Unlock()
	w.faults.mu.Lock()
	for _, f := range w.faults.faults {
		add(f.from, "fault %s %s", f.kind, f.detail)
		if !f.to.IsZero() {
			add(f.to, "healed %s %s", f.kind, f.detail)
		}
	}
	w.faults.mu.Unlock()
	slices.SortFunc(ls, func(a, b line) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		if a.text < b.text {
			return -1
		}
		if a.text > b.text {
			return 1
		}
		return 0
	})
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = fmt.Sprintf("%v %s", l.at, l.text)
	}
	return out
}

// A seed determines the whole trace: two replays of one seed do the same
// things at the same instants, byte for byte, so that a failure the
// simulation finds is replayed by its seed. The default seed is odd (the
// short lock TTL: more expiries, hand-overs and settling); -sim.seed
// checks another one, for -sim.replayhours simulated hours.
//
//	go test ./scheduler -run SimulationReplaysItsSeed -sim.seed 453462 -sim.replayhours 60
func TestSimulationReplaysItsSeed(t *testing.T) {
	seed := uint64(233215)
	if *simSeed != 0 {
		seed = *simSeed
	}
	hours := time.Duration(*simReplayHours * float64(time.Hour))
	cfg := simConfig{seed: seed, duration: hours, replicas: 3, stores: 3,
		ttl: simTTL(seed), skew: time.Second, faultGap: 90 * time.Second}
	var traces [2][]string
	t.Run("replays", func(t *testing.T) {
		for i := range traces {
			t.Run(fmt.Sprint("replay=", i+1), func(t *testing.T) {
				t.Parallel() // two worlds of their own: side by side, one a core
				c := cfg
				c.replay = i + 1
				traces[i] = simulate(t, c)
			})
		}
	})
	if line, a, b, same := firstDifference(traces[0], traces[1]); !same {
		t.Errorf("seed %d (%v simulated): the replays differ from event %d on:\n\tfirst:  %s\n\tsecond: %s\n"+
			"replay: go test ./scheduler -run SimulationReplaysItsSeed -sim.seed %d -sim.replayhours %v -sim.trace /tmp/trace (and diff /tmp/trace.%[1]d.1 /tmp/trace.%[1]d.2)",
			seed, hours, line, a, b, seed, hours.Hours())
	}
}

// firstDifference is the first line (1-based) where a and b differ, with
// both lines ("(end)" past the end of one).
func firstDifference(a, b []string) (line int, x, y string, same bool) {
	for i := range max(len(a), len(b)) {
		x, y = "(end)", "(end)"
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return i + 1, x, y, false
		}
	}
	return 0, "", "", true
}
