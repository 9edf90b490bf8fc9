//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTallySlots checks the scale benchmark's reading of the logs: runs
// and duplicates inside the window only, late ranges expanded, a missed
// slot explained by slot.missed, a run.abandoned without a run.started
// anywhere reported as a phantom, delays sorted, node-unreachable
// warnings counted.
func TestTallySlots(t *testing.T) {
	slot := func(s int) string { return at(float64(s)).Format("2006-01-02T15:04:05Z") }
	started := func(job string, s int, delay string) string {
		return `{"time":"x","level":"INFO","msg":"run started","event":"run.started","job":"` + job +
			`","slot":"` + slot(s) + `","run_id":"r","fencing_token":1,"attempt":1,"start_delay_ms":` + delay + "}"
	}
	r1 := strings.Join([]string{
		started("a", 0, "5.5"),
		started("a", 1, "2"),
		started("a", 3, "1"), // outside [0, 3)
		started("b", 0, "9"),
		`{"level":"INFO","msg":"log","event":"job.log","job":"a","slot":"` + slot(1) + `"}`,
		`panic: not json`,
	}, "\n")
	r2 := strings.Join([]string{
		started("a", 1, "7"), // duplicate of a@1
		`{"level":"WARN","msg":"slot skipped","event":"slot.skipped","job":"b","slot":"` + slot(2) +
			`","reason":"late","missed":2,"first_slot":"` + slot(1) + `"}`,
		`{"level":"WARN","msg":"slot skipped","event":"slot.skipped","job":"b","slot":"` + slot(2) + `","reason":"no_quorum"}`,
		`{"level":"WARN","msg":"slot missed","event":"slot.missed","job":"a","slot":"` + slot(2) + `","reason":"unknown","may_have_started":true}`,
		`{"level":"WARN","msg":"run abandoned","event":"run.abandoned","job":"a","slot":"` + slot(1) + `","run_id":"r","holder":"r1"}`,
		`{"level":"WARN","msg":"run abandoned","event":"run.abandoned","job":"b","slot":"` + slot(7) + `","run_id":"x","holder":"r1"}`,
		`{"level":"WARN","msg":"locking: redis node unreachable","node":"127.0.0.1:1","error":"context deadline exceeded"}`,
		`{"level":"WARN","msg":"locking: redis node unreachable","node":"127.0.0.1:2","error":"EOF"}`,
	}, "\n")
	dir := t.TempDir()
	p1, p2 := filepath.Join(dir, "r1.log"), filepath.Join(dir, "r2.log")
	require.NoError(t, os.WriteFile(p1, []byte(r1), 0o644))
	require.NoError(t, os.WriteFile(p2, []byte(r2), 0o644))

	tl, err := TallySlots([]string{"a", "b"}, at(0), at(3), p1, p2)
	require.NoError(t, err)
	require.Equal(t, 6, tl.Expected)
	require.Equal(t, 4, tl.Runs)
	require.Equal(t, 3, tl.Slots)
	require.Len(t, tl.Duplicates, 1)
	require.Contains(t, tl.Duplicates[0], "a 10:00:01.000 ×2")
	require.Equal(t, map[string]int{"late": 2, "missed/unknown": 1}, tl.NotRun)
	require.Equal(t, []string{"b " + stamp(at(7))}, tl.Phantoms, "a@1 started; b@7 never did")
	require.Equal(t, []float64{2, 5.5, 7, 9}, tl.Delays)
	require.Equal(t, 9.0, tl.Percentile(99))
	require.Equal(t, 2, tl.Unreachable)
	require.Contains(t, tl.Verdict(), "NO: 1 slots ran twice")

	tl.Duplicates = nil
	require.Contains(t, tl.Verdict(), "NO: 1 run.abandoned for runs that never started")
	tl.Phantoms = nil
	require.Equal(t, "no duplicate; 50.0 % not run (late 2, missed/unknown 1)", tl.Verdict())
	tl.NotRun["unexplained"] = 1
	require.Contains(t, tl.Verdict(), "NO: 1 slots not run and not explained")
	require.Equal(t, "17,000", thousands(17000))
	require.Equal(t, "999", thousands(999))
}

// TestSplitPhases: with 2 s periods from the window's start, seconds 1
// and 5 are storm seconds, 3 and 7 quiet ones; 0, 2, 4 and 6 start a
// phase and count for neither; a second's delays and reasons go with it.
func TestSplitPhases(t *testing.T) {
	tl := SlotTally{From: at(0), To: at(8), BySecond: map[int64]*SecondTally{}}
	for s := range 8 {
		tl.BySecond[at(float64(s)).Unix()] = &SecondTally{Delays: []float64{float64(100 * s)}, NotRun: map[string]int{"late": s}}
	}
	quiet, storm := splitPhases(tl, at(0), 2*time.Second)
	require.Equal(t, 2, quiet.seconds)
	require.Equal(t, 2, storm.seconds)
	require.Equal(t, []float64{300, 700}, quiet.delays)
	require.Equal(t, []float64{100, 500}, storm.delays)
	require.Equal(t, map[string]int{"late": 10}, quiet.notRun)
	require.Equal(t, map[string]int{"late": 6}, storm.notRun)
	require.Equal(t, 500.0, storm.percentile(99))
}
