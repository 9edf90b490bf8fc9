package history

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// genEntry draws an entry of one slot from a small alphabet, so that
// generated sets often hold equal outcomes, equal reasons and duplicates.
func genEntry(r *rand.Rand) Entry {
	outcomes := append(slices.Clone(Outcomes), "someday") // a newer version's outcome
	reasons := []Reason{"", ReasonLate, ReasonOverlap, ReasonPaused, ReasonReplaced, ReasonUnknown,
		ReasonNoReplica, ReasonNoQuorum, ReasonTimeout, ReasonLockLost}
	pick := func(s []string) string { return s[r.IntN(len(s))] }
	e := Entry{Slot: "2026-12-02T10:00:00Z", Outcome: outcomes[r.IntN(len(outcomes))], Reason: reasons[r.IntN(len(reasons))],
		Replica: pick([]string{"", "r1", "r2"}), RunID: pick([]string{"", "a", "b"}), SettledBy: pick([]string{"", "r3"}),
		SettleID: pick([]string{"", "x"}), Token: uint64(r.IntN(3)), MayHaveStarted: r.IntN(3) == 0, Recovered: r.IntN(4) == 0}
	return e
}

// TestJoinIsASemilattice: over generated entries, Join is commutative,
// associative and idempotent, and JoinAll does not depend on the order
// of the entries or on duplicates.
func TestJoinIsASemilattice(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		a, b, c := genEntry(r), genEntry(r), genEntry(r)
		if Join(a, b) != Join(b, a) {
			t.Fatalf("not commutative:\n%+v\n%+v", a, b)
		}
		if Join(Join(a, b), c) != Join(a, Join(b, c)) {
			t.Fatalf("not associative:\n%+v\n%+v\n%+v", a, b, c)
		}
		if Join(a, a) != a {
			t.Fatalf("not idempotent: %+v", a)
		}
		if (Compare(a, b) == 0) != (a == b) {
			t.Fatalf("Compare is not total: %+v %+v", a, b)
		}
	}
	for range 2000 {
		entries := make([]Entry, 1+r.IntN(6))
		for i := range entries {
			entries[i] = genEntry(r)
		}
		want, _ := JoinAll(entries)
		shuffled := append(slices.Clone(entries), entries[r.IntN(len(entries))])
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if got, _ := JoinAll(shuffled); got != want {
			t.Fatalf("JoinAll depends on order or duplicates:\n%+v\n%+v", got, want)
		}
	}
}

// TestJoinNeverLosesEvidence: no entry that says the body ran or may have
// run is outranked by one that says it did not, and the join is
// backfillable only when every entry is.
func TestJoinNeverLosesEvidence(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		entries := make([]Entry, 1+r.IntN(5))
		for i := range entries {
			entries[i] = genEntry(r)
		}
		j, _ := JoinAll(entries)
		for _, e := range entries {
			if e.Evidence() > j.Evidence() {
				t.Fatalf("%+v outranked by %+v", e, j)
			}
			if e.Evidence() >= MayHaveRun && j.Backfillable() {
				t.Fatalf("join %+v backfillable though %+v may have run", j, e)
			}
		}
		all := !slices.ContainsFunc(entries, func(e Entry) bool { return !e.Backfillable() })
		if j.Backfillable() != all {
			t.Fatalf("join %+v backfillable=%v, every entry backfillable=%v", j, j.Backfillable(), all)
		}
	}
}

// TestEvidenceOfEachOutcome pins the order of evidence, one named case a
// kind of entry.
func TestEvidenceOfEachOutcome(t *testing.T) {
	for _, c := range []struct {
		name string
		e    Entry
		want Evidence
	}{
		{"succeeded", Entry{Outcome: OutcomeSucceeded}, Ran},
		{"failed", Entry{Outcome: OutcomeFailed}, Ran},
		{"canceled by lock loss", Entry{Outcome: OutcomeCanceled, Reason: ReasonLockLost}, Ran},
		{"abandoned", Entry{Outcome: OutcomeAbandoned}, RanUnfinished},
		{"missed, may have started", Entry{Outcome: OutcomeMissed, Reason: ReasonUnknown, MayHaveStarted: true}, MayHaveRun},
		{"skipped for a pause", Entry{Outcome: OutcomeSkipped, Reason: ReasonPaused}, NotRunByRule},
		{"skipped for overlap", Entry{Outcome: OutcomeSkipped, Reason: ReasonOverlap}, NotRunByRule},
		{"skipped, replaced", Entry{Outcome: OutcomeSkipped, Reason: ReasonReplaced}, NotRunByRule},
		{"skipped late", Entry{Outcome: OutcomeSkipped, Reason: ReasonLate}, NotRun},
		{"missed, no replica", Entry{Outcome: OutcomeMissed, Reason: ReasonNoReplica}, NotRun},
		{"missed, unknown", Entry{Outcome: OutcomeMissed, Reason: ReasonUnknown}, NotRun},
		{"a newer version's outcome", Entry{Outcome: "someday"}, Ran},
	} {
		if got := c.e.Evidence(); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
