//go:build linux

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

// mkRun is a run of slot t0+slot seconds, started and ended at the given
// offsets (end < 0: no end line).
func mkRun(job string, slot int, replica string, token uint64, start, end float64) Run {
	r := Run{
		Job: job, Slot: at(float64(slot)), Replica: replica, Token: token,
		RunID:    fmt.Sprintf("%s-%d-%s-%d", job, slot, replica, token),
		Attempts: 1, FirstAttempts: 1, Start: at(start), Outcome: "ok",
	}
	if end >= 0 {
		r.End = at(end)
	} else {
		r.Outcome = ""
	}
	return r
}

func startedEv(r Run) Event {
	return Event{Time: r.Start, Replica: r.Replica, Event: "run.started", Job: r.Job,
		Slot: r.Slot.Format(time.RFC3339), RunID: r.RunID, Token: r.Token}
}

func skipEv(job string, slot int, replica, reason string) Event {
	return Event{Time: at(float64(slot)), Replica: replica, Event: "slot.skipped", Job: job,
		Slot: at(float64(slot)).Format(time.RFC3339), Reason: reason}
}

// steady builds n one-second slots of job "tick", each run once by a
// rotating replica with increasing tokens.
func steady(n int) ([]Run, []Event) {
	var runs []Run
	var evs []Event
	for i := 0; i < n; i++ {
		r := mkRun("tick", i, fmt.Sprintf("r%d", i%3+1), uint64(i+1), float64(i)+0.01, float64(i)+0.3)
		runs = append(runs, r)
		evs = append(evs, startedEv(r))
	}
	return runs, evs
}

func tickInput(runs []Run, evs []Event, n int) Input {
	return Input{
		Jobs: []JobExpect{{Name: "tick", Schedule: "* * * * * *"}},
		From: at(0), To: at(float64(n - 1)),
		Runs: runs, Events: evs, Skew: time.Second, Now: at(float64(n + 5)),
	}
}

func TestCheckSteadyIsClean(t *testing.T) {
	runs, evs := steady(10)
	r := Check(tickInput(runs, evs, 10))
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if r.Slots != 10 || r.Ran != 10 || r.Runs != 10 {
		t.Fatalf("counts: %v", r)
	}
}

func TestCheckDuplicate(t *testing.T) {
	runs, evs := steady(10)
	d := mkRun("tick", 4, "r3", 11, 4.02, 4.3)
	runs = append(runs, d)
	evs = append(evs, startedEv(d))
	r := Check(tickInput(runs, evs, 10))
	require.Equal(t, 1, r.Duplicates, "duplicates: %v", r)
	if r.Err() == nil || !strings.Contains(r.Err().Error(), "slot 2026-11-29T10:00:04Z ran 2 times") {
		t.Fatalf("error does not name the slot: %v", r.Err())
	}
	// Tokens 5 (slot 4) then 11 (slot 4 again, start 4.02) then 6: out of order.
	require.Equal(t, 1, r.TokenViolations, "token violations: %v", r)
}

func TestCheckDuplicateAttemptOne(t *testing.T) {
	runs, evs := steady(3)
	runs[1].FirstAttempts, runs[1].Attempts = 2, 2
	r := Check(tickInput(runs, evs, 3))
	require.Equal(t, 1, r.Duplicates, "duplicates: %v", r)
}

func TestCheckMissOutsideAndInsideWindow(t *testing.T) {
	runs, evs := steady(10)
	// Drop slots 3 and 7 (runs and their log lines).
	drop := func(i int) {
		runs = append(runs[:i:i], runs[i+1:]...)
		evs = append(evs[:i:i], evs[i+1:]...)
	}
	drop(7)
	drop(3)
	in := tickInput(runs, evs, 10)
	r := Check(in)
	if r.Misses != 2 || r.Unexplained != 2 {
		t.Fatalf("misses=%d unexplained=%d, want 2 and 2: %v", r.Misses, r.Unexplained, r)
	}
	in.Legit = []Window{{From: at(6.5), To: at(7.5), Why: "replica killed"}}
	r = Check(in)
	if r.Misses != 1 || r.MissesExcused != 1 || r.Unexplained != 1 || r.UnexplainedInGap != 1 {
		t.Fatalf("with a window: %v", r)
	}
	if !strings.Contains(r.Err().Error(), "miss: tick slot 2026-11-29T10:00:03Z") {
		t.Fatalf("evidence: %v", r.Err())
	}
}

// One slot.skipped late line accounts for the run of late slots it names
// (missed, first_slot .. slot): a replica paused past the lateness bound
// reports the slots it stepped over in one line, and those slots are
// explained, though still misses outside fault windows.
func TestCheckLateRangeExplainsEachSlot(t *testing.T) {
	runs, evs := steady(8)
	runs = append(runs[:3:3], runs[6:]...)
	evs = append(evs[:3:3], evs[6:]...)
	late := skipEv("tick", 5, "r1", "late")
	late.FirstSlot, late.Missed = at(3).Format(time.RFC3339), 3
	r := Check(tickInput(runs, append(evs, late), 8))
	require.Equal(t, 3, r.Misses, "%v", r)
	require.Zero(t, r.Unexplained, "%v", r)

	// missed bounds the range: a line for two slots explains the last two.
	late.Missed = 2
	r = Check(tickInput(runs, append(evs, late), 8))
	require.Equal(t, 1, r.Unexplained, "%v", r)
	require.Contains(t, r.Err().Error(), "unexplained: tick slot 2026-11-29T10:00:03Z")
}

func TestCheckNoQuorumSkipExplainsButStillMisses(t *testing.T) {
	runs, evs := steady(5)
	runs = append(runs[:2:2], runs[3:]...)
	evs = append(evs[:2:2], evs[3:]...)
	evs = append(evs, skipEv("tick", 2, "r1", "no_quorum"), skipEv("tick", 2, "r2", "held"))
	r := Check(tickInput(runs, evs, 5))
	if r.Misses != 1 || r.Unexplained != 0 {
		t.Fatalf("a no_quorum skip explains the slot but it is still a miss outside fault windows: %v", r)
	}
	// A held skip alone explains nothing.
	evs = evs[:len(evs)-2]
	evs = append(evs, skipEv("tick", 2, "r2", "held"))
	r = Check(tickInput(runs, evs, 5))
	require.Equal(t, 1, r.Unexplained, "held alone must not explain a slot: %v", r)
}

func longInput(runs []Run, evs []Event, n int) Input {
	return Input{
		Jobs: []JobExpect{{Name: "long", Schedule: "* * * * * *", Forbid: true}},
		From: at(0), To: at(float64(n - 1)),
		Runs: runs, Events: evs, Skew: time.Second, Now: at(float64(n + 5)),
	}
}

func TestCheckForbidOverlapSkips(t *testing.T) {
	// A 2.5 s job every second: slots 0, 3, 6 run; the others are skipped
	// with reason overlap while a run goes on.
	var runs []Run
	var evs []Event
	for i := 0; i < 9; i++ {
		if i%3 == 0 {
			r := mkRun("long", i, "r1", uint64(i+1), float64(i)+0.01, float64(i)+2.52)
			runs = append(runs, r)
			evs = append(evs, startedEv(r))
		} else {
			evs = append(evs, skipEv("long", i, "r2", "overlap"))
		}
	}
	r := Check(longInput(runs, evs, 9))
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if r.Ran != 3 || r.OverlapSkipped != 6 {
		t.Fatalf("counts: %v", r)
	}

	// An overlap skip with no run going on is a miss.
	evs = append(evs, skipEv("long", 12, "r2", "overlap"))
	in := longInput(runs, evs, 13)
	in.To = at(12)
	r = Check(in)
	// Slots 9, 10, 11 have nothing at all; slot 12 has a bogus overlap skip.
	if r.Misses != 4 || r.Unexplained != 3 {
		t.Fatalf("bogus overlap skip: %v", r)
	}
}

func TestCheckOverlapAndFreezeExcuse(t *testing.T) {
	// r1 runs slot 0 from 0.01; frozen 1..7; r2 runs slot 5 from 5.01 with
	// a higher token; r1's run ends at 7.3 (canceled after waking).
	a := mkRun("long", 0, "r1", 1, 0.01, 7.3)
	a.Outcome = "canceled"
	b := mkRun("long", 5, "r2", 2, 5.01, 7.5)
	in := longInput([]Run{a, b}, []Event{startedEv(a), startedEv(b)}, 1)
	r := Check(in)
	require.Equal(t, 1, r.Overlaps, "overlap not found: %v", r)
	in.Freezes = []Freeze{{Replica: "r1", From: at(1), To: at(7)}}
	r = Check(in)
	if r.Overlaps != 0 || r.ExcusedOverlaps != 1 || len(r.Excused) != 1 {
		t.Fatalf("freeze should excuse: %v", r)
	}
	// The stale run went on too long after waking: not excused.
	a.End = at(9.5)
	in.Runs = []Run{a, b}
	r = Check(in)
	require.Equal(t, 1, r.Overlaps, "a stale run that is not canceled soon is an overlap: %v", r)
	// The later run has a lower token: not excused, and a token violation.
	a.End, a.Token, b.Token = at(7.3), 5, 2
	in.Runs = []Run{a, b}
	in.Events = []Event{startedEv(a), startedEv(b)}
	if r = Check(in); r.Overlaps != 1 || r.TokenViolations != 1 {
		t.Fatalf("lower token: %v", r)
	}
	// Another replica's freeze excuses nothing.
	a.Token, b.Token = 1, 2
	in.Runs = []Run{a, b}
	in.Events = []Event{startedEv(a), startedEv(b)}
	in.Freezes = []Freeze{{Replica: "r3", From: at(1), To: at(7)}}
	r = Check(in)
	require.Equal(t, 1, r.Overlaps, "r3's freeze excused r1: %v", r)
}

func TestCheckKilledRunEndsAtKill(t *testing.T) {
	a := mkRun("long", 0, "r1", 1, 0.01, -1) // killed: no end line
	b := mkRun("long", 4, "r2", 2, 4.01, 4.5)
	in := longInput([]Run{a, b}, []Event{startedEv(a), startedEv(b)}, 1)
	r := Check(in)
	require.Equal(t, 1, r.Overlaps, "an open run without a kill runs until Now: %v", r)
	in.Kills = []Kill{{Replica: "r1", At: at(0.5)}}
	r = Check(in)
	require.Equal(t, 0, r.Overlaps, "killed run should end at the kill: %v", r)
	// A kill before the run started does not end it.
	in.Kills = []Kill{{Replica: "r1", At: at(-3)}}
	r = Check(in)
	require.Equal(t, 1, r.Overlaps, "earlier kill ended a later run: %v", r)
}

func TestCheckTokenOrder(t *testing.T) {
	r := Check(swappedTokens(6, 3, 4))
	if r.TokenViolations != 1 || r.Duplicates != 0 {
		t.Fatalf("swapped tokens: %v", r)
	}
	runs, evs := steady(6)
	runs[2].Token, evs[2].Token = runs[1].Token, runs[1].Token
	r = Check(tickInput(runs, evs, 6))
	require.Equal(t, 1, r.TokenViolations, "equal tokens: %v", r)
	// Tokens are per job: another job's tokens do not interleave.
	runs, evs = steady(4)
	o := mkRun("other", 1, "r2", 1, 1.05, 1.2)
	runs = append(runs, o)
	evs = append(evs, startedEv(o))
	r = Check(tickInput(runs, evs, 4))
	require.Equal(t, 0, r.TokenViolations, "tokens of another job counted: %v", r)
}

// Runs of slots fired together when the whole host's pause ended may
// start out of token order; only those: a swap outside the pause and its
// lateness bound still counts.
func TestCheckHostPauseExcusesTokenOrderInIt(t *testing.T) {
	in := swappedTokens(8, 3, 4)
	in.HostPauses = []Window{{From: at(2.5), To: at(4.5), Why: "host paused"}}
	r := Check(in)
	require.Zero(t, r.TokenViolations, "%v", r)
	require.Len(t, r.Excused, 1)
	in.HostPauses = []Window{{From: at(3.5), To: at(5), Why: "host paused"}}
	require.Equal(t, 1, Check(in).TokenViolations, "a slot before the window")
}

// Runs of slots whose claims a resumed Redis majority answered together
// may start out of token order under overlap: allow (a documented limit);
// under forbid the job lease orders them, and a swap still counts.
func TestCheckClaimsTogetherExcuseAllowOnly(t *testing.T) {
	in := swappedTokens(8, 3, 4)
	in.Together = []Window{{From: at(2.5), To: at(4.5), Why: "Redis majority frozen"}}
	r := Check(in)
	require.Zero(t, r.TokenViolations, "%v", r)
	require.Len(t, r.Excused, 1)
	in.Jobs[0].Forbid = true
	require.Equal(t, 1, Check(in).TokenViolations, "a forbid job")
	in.Jobs[0].Forbid = false
	in.Together = []Window{{From: at(3.5), To: at(5), Why: "Redis majority frozen"}}
	require.Equal(t, 1, Check(in).TokenViolations, "a slot before the window")
}

// swappedTokens is n steady tick slots whose runs i and j have each
// other's tokens, in the ledger and the log alike.
func swappedTokens(n, i, j int) Input {
	runs, evs := steady(n)
	runs[i].Token, runs[j].Token = runs[j].Token, runs[i].Token
	evs[i].Token, evs[j].Token = evs[j].Token, evs[i].Token
	return tickInput(runs, evs, n)
}

func TestCheckLogMismatch(t *testing.T) {
	runs, evs := steady(4)
	evs[1].Token = 99
	evs = append(evs[:3:3], evs[4:]...) // slot 3 has no log line at all
	r := Check(tickInput(runs, evs, 4))
	if r.LogMismatches != 2 || r.Unexplained != 1 {
		t.Fatalf("log mismatches: %v", r)
	}
}

// A run reported abandoned that ended by itself on a replica neither
// frozen nor killed while it ran is a phantom outcome; one whose replica
// froze or was killed during it, or whose slot is in a fault window, may
// have lost its lease.
func TestCheckAbandonedRunThatEnded(t *testing.T) {
	runs, evs := steady(4)
	abandoned := Event{Time: at(2.5), Replica: "r3", Event: "run.abandoned", Job: "tick",
		Slot: runs[1].Slot.Format(time.RFC3339), RunID: runs[1].RunID, Holder: runs[1].Replica}
	in := tickInput(runs, append(evs, abandoned), 4)
	r := Check(in)
	require.Equal(t, 1, r.LogMismatches, "a run that ended, reported abandoned: %v", r)
	froze := in
	froze.Freezes = []Freeze{{Replica: runs[1].Replica, From: at(1.1), To: at(1.2)}}
	require.Equal(t, 0, Check(froze).LogMismatches, "its replica froze during it")
	killed := in
	killed.Kills = []Kill{{Replica: runs[1].Replica, At: at(1.2)}}
	require.Equal(t, 0, Check(killed).LogMismatches, "its replica was killed during it")
	window := in
	window.Legit = []Window{{From: at(1), To: at(1), Why: "cut"}}
	require.Equal(t, 0, Check(window).LogMismatches, "its slot is in a fault window")
	canceled := tickInput(append([]Run(nil), runs...), append(evs, abandoned), 4)
	canceled.Runs[1].Outcome = "canceled"
	require.Equal(t, 0, Check(canceled).LogMismatches, "it was canceled (its lease lost)")
}

func TestCheckAcquiredExplainsOnlyInFaultWindow(t *testing.T) {
	runs, evs := steady(3)
	runs, evs = runs[:2], evs[:2]
	evs = append(evs, Event{Replica: "r3", Event: "slot.acquired", Job: "tick", Slot: at(2).Format(time.RFC3339)})
	in := tickInput(runs, evs, 3)
	if r := Check(in); r.Unexplained != 1 || r.Misses != 1 {
		t.Fatalf("acquired-only outside a window: %v", r)
	}
	in.Legit = []Window{{From: at(1.5), To: at(2.5)}}
	if r := Check(in); r.Failures() != 0 || r.MissesExcused != 1 {
		t.Fatalf("acquired-only inside a window: %v", r)
	}
}

// Every check runs on every scenario and reports its own failures and
// evidence, in the order of the table in docs/guarantees.md.
func TestCheckFindingsPerCheck(t *testing.T) {
	runs, evs := steady(6)
	d := mkRun("tick", 4, "r3", 11, 4.02, 4.3) // slot 4 twice; token 11 before 6
	runs = append(runs, d)
	evs = append(evs, startedEv(d))
	runs, evs = append(runs[:2:2], runs[3:]...), append(evs[:2:2], evs[3:]...) // slot 2: no run, no line
	evs[0].Token = 99                                                          // ledger/log disagree on slot 0

	r := Check(tickInput(runs, evs, 6))
	var names []string
	got := map[string]Finding{}
	for _, f := range r.Findings {
		names = append(names, f.Check)
		got[f.Check] = f
	}
	require.Equal(t, []string{"duplicates", "misses", "overlaps", "fencing-token violations", "unexplained slots", "ledger/log mismatches"}, names)
	for name, want := range map[string]int{
		"duplicates": 1, "misses": 1, "overlaps": 0, "fencing-token violations": 1, "unexplained slots": 1, "ledger/log mismatches": 1,
	} {
		require.Equal(t, want, got[name].Failures, name)
		require.Len(t, got[name].Problems, want, name)
	}
	require.Contains(t, got["duplicates"].Problems[0], "slot 2026-11-29T10:00:04Z ran 2 times")
	require.Contains(t, got["misses"].Problems[0], "miss: tick slot 2026-11-29T10:00:02Z")
	require.Equal(t, 5, r.Failures())

	msg := r.Err().Error()
	require.Contains(t, msg, "\n  duplicates: 1\n    duplicate: tick slot 2026-11-29T10:00:04Z")
	require.Contains(t, msg, "\n  ledger/log mismatches: 1\n    log mismatch: ledger run tick-0-r1-1")
	require.NotContains(t, msg, "overlaps: 0")

	// A soak's total sums the findings check by check.
	var total Report
	total.Add(r)
	total.Add(r)
	require.Len(t, total.Findings, len(r.Findings))
	require.Equal(t, 2, total.Findings[0].Failures)
	require.Len(t, total.Findings[0].Problems, 2)
	require.Equal(t, 10, total.Failures())
}

func TestExpectedSlots(t *testing.T) {
	got, err := ExpectedSlots("*/5 * * * * *", at(0.5), at(20))
	require.NoError(t, err)
	want := []time.Time{at(5), at(10), at(15), at(20)}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if _, err := ExpectedSlots("61 * * * * *", at(0), at(1)); err == nil {
		t.Fatal("bad schedule accepted")
	}
}

func TestParseLedger(t *testing.T) {
	in := `{"ev":"start","job":"tick","slot":"2026-11-29T10:00:05Z","replica":"r1","token":"7","run_id":"a","attempt":"1","pid":1,"unix_ns":1000}
{"ev":"start","job":"tick","slot":"2026-11-29T10:00:06Z","replica":"r2","token":"8","run_id":"b","attempt":"1","pid":2,"unix_ns":1500}
{"ev":"end","job":"tick","slot":"2026-11-29T10:00:05Z","replica":"r1","token":"7","run_id":"a","attempt":"1","pid":1,"unix_ns":2000,"outcome":"failed"}
{"ev":"start","job":"tick","slot":"2026-11-29T10:00:05Z","replica":"r1","token":"7","run_id":"a","attempt":"2","pid":3,"unix_ns":3000}
{"ev":"end","job":"tick","slot":"2026-11-29T10:00:05Z","replica":"r1","token":"7","run_id":"a","attempt":"2","pid":3,"unix_ns":4000,"outcome":"ok"}
{"ev":"start","job":"m","slot":"manual","replica":"r3","token":"1","run_id":"c","attempt":"1","pid":4,"unix_ns":5000}
`
	runs, err := ParseLedger(strings.NewReader(in))
	require.NoError(t, err)
	if len(runs) != 3 {
		t.Fatalf("runs: %+v", runs)
	}
	a := runs[0]
	if a.RunID != "a" || a.Attempts != 2 || a.FirstAttempts != 1 || a.Token != 7 || a.Outcome != "ok" ||
		a.Start != time.Unix(0, 1000) || a.End != time.Unix(0, 4000) || !a.Slot.Equal(at(5)) {
		t.Fatalf("run a: %+v", a)
	}
	if runs[1].Outcome != "" || !runs[1].End.IsZero() {
		t.Fatalf("run b has no end: %+v", runs[1])
	}
	if !runs[2].Manual {
		t.Fatalf("run c is manual: %+v", runs[2])
	}
	if _, err := ParseLedger(strings.NewReader(`{"ev":"start","token":"x"}`)); err == nil {
		t.Fatal("bad token accepted")
	}
}

func TestParseEvents(t *testing.T) {
	in := `{"time":"2026-11-29T10:00:05.012345Z","level":"INFO","msg":"run started","replica":"r1","event":"run.started","job":"tick","slot":"2026-11-29T10:00:05Z","run_id":"a","fencing_token":7,"attempt":1}
{"time":"2026-11-29T10:00:05.1Z","level":"DEBUG","msg":"skip","replica":"r2","event":"slot.skipped","job":"tick","slot":"2026-11-29T10:00:05Z","reason":"held","holder":"r1"}
panic: boom
{"time":"2026-11-29T10:00:06Z","level":"WARN","msg":"x","replica":"r2","event":"run.canceled","job":"tick","slot":"2026-11-29T10:00:06Z","fencing_token":"9","reason":"lock_lost"}
`
	evs, junk, err := ParseEvents(strings.NewReader(in))
	require.NoError(t, err)
	if len(evs) != 3 || len(junk) != 1 || junk[0] != "panic: boom" {
		t.Fatalf("events %+v junk %q", evs, junk)
	}
	if evs[0].Token != 7 || evs[0].Event != "run.started" || evs[0].Replica != "r1" || evs[0].Time.Nanosecond() != 12345000 {
		t.Fatalf("event 0: %+v", evs[0])
	}
	if evs[1].Holder != "r1" || evs[1].Reason != "held" {
		t.Fatalf("event 1: %+v", evs[1])
	}
	if evs[2].Token != 9 || evs[2].Reason != "lock_lost" {
		t.Fatalf("event 2: %+v", evs[2])
	}
}

// The soak's case: a job forked just before its replica froze writes its
// first ledger line only after waking. Its start is its run.started line;
// if it is canceled at once the overlap is the contract's exception, if it
// runs on (not canceled, 0.4 s) it is an overlap; never a token violation.
func TestCheckStaleRunStartedBeforeFreeze(t *testing.T) {
	a := mkRun("long", 32, "r3", 343, 37.227, 37.25) // ledger start after waking
	a.Outcome = "canceled"
	ev := startedEv(a)
	ev.Time = at(31.21) // slotlock started it before the freeze
	b := mkRun("long", 37, "r2", 351, 37.021, 37.422)
	in := longInput([]Run{a, b}, []Event{ev, startedEv(b)}, 1)
	in.From, in.To = at(32), at(32)
	in.Freezes = []Freeze{{Replica: "r3", From: at(31.211), To: at(37.226)}}
	r := Check(in)
	if r.TokenViolations != 0 || r.Overlaps != 0 || r.ExcusedOverlaps != 1 {
		t.Fatalf("canceled at once: %v", r)
	}
	a.Outcome, a.End = "ok", at(37.634)
	in.Runs = []Run{a, b}
	r = Check(in)
	if r.TokenViolations != 0 || r.Overlaps != 1 {
		t.Fatalf("ran on 0.4 s after waking, not canceled: %v", r)
	}
	// Ended by itself right on waking (its work was done): excused.
	a.End = at(37.3)
	in.Runs = []Run{a, b}
	if r = Check(in); r.Overlaps != 0 || r.ExcusedOverlaps != 1 {
		t.Fatalf("ended at once on waking: %v", r)
	}
	// Without the log line the ledger start counts: token order broken.
	in.Events = []Event{startedEv(b)}
	r = Check(in)
	require.Equal(t, 1, r.TokenViolations, "ledger start alone: %v", r)
}

func TestCheckDuplicateFromLogsOnly(t *testing.T) {
	runs, evs := steady(4)
	// A second replica logged run.started for slot 2 but its job never
	// wrote (killed at once): still a duplicate.
	ghost := mkRun("tick", 2, "r3", 50, 2.02, 2.03)
	evs = append(evs, startedEv(ghost))
	r := Check(tickInput(runs, evs, 4))
	require.Equal(t, 1, r.Duplicates, "log-only second run: %v", r)
	// One log-only run and no ledger run: a run (its job died before
	// writing), not a duplicate; the slot counts as not run.
	runs, evs = steady(4)
	runs = append(runs[:1:1], runs[2:]...)
	r = Check(tickInput(runs, evs, 4))
	if r.Duplicates != 0 || r.Misses != 1 {
		t.Fatalf("log-only single run: %v", r)
	}
}

// A slot every replica skipped because the job was paused is not a miss;
// the same slot with no explanation is.
func TestCheckerPausedSlotIsNotAMiss(t *testing.T) {
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	job := JobExpect{Name: "tick", Schedule: "* * * * * *"}
	in := Input{From: from, To: from, Jobs: []JobExpect{job}, Skew: time.Second,
		Events: []Event{{Event: "slot.skipped", Job: "tick", Slot: from.Format(time.RFC3339), Reason: "paused", Replica: "r1"}}}
	r := Check(in)
	require.NoError(t, r.Err())
	require.Equal(t, 1, r.PausedSkipped)
	in.Events = nil
	require.Error(t, Check(in).Err())
}
