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
func checkTokenJumps(t *testing.T, runs []record, overlapSlots []string) {
	t.Helper()
	if len(runs) < 2 || len(overlapSlots) == 0 {
		t.Fatalf("%d runs, %d overlap skips: the scenario made no jump to look at", len(runs), len(overlapSlots))
	}
	var tokens []uint64
	for _, r := range runs {
		tokens = append(tokens, r.Run.FencingToken)
	}
	t.Logf("run tokens %v, %d slots skipped for overlap", tokens, len(overlapSlots))
	jumped := false
	for i := 1; i < len(runs); i++ {
		prev, cur := runs[i-1], runs[i]
		if cur.Run.FencingToken <= prev.Run.FencingToken {
			t.Fatalf("token %d after %d: not increasing", cur.Run.FencingToken, prev.Run.FencingToken)
		}
		skipped := uint64(0)
		for _, s := range overlapSlots {
			at, err := time.Parse(time.RFC3339, s)
			if err != nil {
				t.Fatal(err)
			}
			if at.After(prev.Run.Slot) && at.Before(cur.Run.Slot) {
				skipped++
			}
		}
		if gap := cur.Run.FencingToken - prev.Run.FencingToken; gap < skipped+1 {
			t.Errorf("slots %s..%s: token %d then %d with %d overlap skips between: each skipped claim takes a token",
				prev.Run.Slot.Format(time.TimeOnly), cur.Run.Slot.Format(time.TimeOnly), prev.Run.FencingToken, cur.Run.FencingToken, skipped)
		}
		if skipped > 0 && cur.Run.FencingToken-prev.Run.FencingToken > 1 {
			jumped = true
		}
	}
	if !jumped {
		t.Errorf("no token jump over overlap skips")
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
		checkTokenJumps(t, rec.all(), overlapSkips(e.sink.events(t)))
	})
}

// The same on three real Redis nodes with three replicas (the claim script
// itself).
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
	checkTokenJumps(t, rec.all(), overlapSkips(c.sink.events(t)))
}
