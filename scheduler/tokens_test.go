package scheduler

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"
)

// Fencing tokens are strictly increasing, not dense. Every lease won in a
// job's family takes a value of the job's fencing counter: each slot's
// claim, including the claim of a slot then skipped for overlap (the job
// lease is held by a run still going on), which no run uses, and the job
// lease when it is taken on its own. On Redis more go by: each replica
// proposes one above the last token it knows for every attempt it makes,
// refused ones included (locking/redlock propose), and a grant sets the
// counter to the larger of its next value and the proposal, so a replica
// that asked for a held job lease many times jumps further (acquire.lua).
// Either way a run that outlasts k slots makes the next run's token jump
// by at least k+1: the jumps of 33, 47, 60 in a history with long runs.
func checkTokenJumps(t *testing.T, runs []record, overlapSlots []string, ahead time.Duration) {
	t.Helper()
	if len(runs) < 2 || len(overlapSlots) == 0 {
		t.Fatalf("%d runs, %d overlap skips: the scenario made no jump to look at", len(runs), len(overlapSlots))
	}
	// Every slot here was claimed once, at its due time (a run's or an
	// overlap skip's) by a clock up to ahead of real time, and each claim
	// took a token. Slots can wait for the job lease together and start
	// out of order, so count, for each run, the claims made before it
	// started: its token is above each of them.
	var claimed []time.Time
	for _, r := range runs {
		claimed = append(claimed, r.Run.Slot)
	}
	for _, s := range overlapSlots {
		at, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		claimed = append(claimed, at)
	}
	var tokens []uint64
	jumped := false
	for i, r := range runs {
		tokens = append(tokens, r.Run.FencingToken)
		before := uint64(0)
		for _, at := range claimed {
			if at.Before(r.Start.Add(-ahead - 50*time.Millisecond)) {
				before++
			}
		}
		if r.Run.FencingToken < before {
			t.Errorf("run of slot %s started %s with token %d, below the %d claims made before it: a skipped claim took no token",
				r.Run.Slot.Format(time.TimeOnly), r.Start.Format("15:04:05.000"), r.Run.FencingToken, before)
		}
		if i > 0 && r.Run.FencingToken > runs[i-1].Run.FencingToken+1 {
			jumped = true
		}
	}
	t.Logf("run tokens %v, %d slots skipped for overlap", tokens, len(overlapSlots))
	if !jumped {
		t.Errorf("no token jump between runs")
	}
}

// overlapSkips returns the slots skipped for overlap, each once.
func overlapSkips(evs []event) []string {
	var out []string
	for _, e := range where(evs, "slot.skipped", "reason", "overlap") {
		if !slices.Contains(out, e.str("slot")) {
			out = append(out, e.str("slot"))
		}
	}
	return out
}

// One replica, in-process locks (which take tokens as the Redis script
// does): an every-second forbid job whose runs last 3.5 s.
func TestTokensJumpOverOverlapSkips(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{d: 3500 * time.Millisecond, now: time.Now}
		stop := running(t, e.scheduler("r1", nil, everySecond(t, "long", rec)))
		time.Sleep(12 * time.Second)
		stop()
		checkTokenJumps(t, rec.all(), overlapSkips(e.sink.events(t)), 0)
	})
}

// The same on three real Redis nodes with three replicas (the claim script
// itself), whose clocks are up to itOffsets[0] ahead.
func TestRedisTokensJumpOverOverlapSkips(t *testing.T) {
	needRedis(t)
	if testing.Short() {
		t.Skip("real time")
	}
	t.Parallel()
	rec := &recorder{d: 3500 * time.Millisecond, now: time.Now}
	c := startCluster(t, func() []JobSpec { return []JobSpec{everySecond(t, "long", rec)} }, nil)
	time.Sleep(10 * time.Second)
	c.stopAll()
	checkTokenJumps(t, rec.all(), overlapSkips(c.sink.events(t)), itOffsets[0])
}
