//go:build linux

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBurstStats: jobs every 5 s over [0, 15) have three instants; the
// figures come from run.started lines alone — the latest start of each
// instant, their max and median, the instant where nothing started, the
// slots shed (a late range steps by the period, not by the second) and
// a duplicate.
func TestBurstStats(t *testing.T) {
	slot := func(s int) string { return at(float64(s)).Format(time.RFC3339) }
	started := func(job string, s int, delay string) string {
		return `{"level":"INFO","msg":"run.started","event":"run.started","job":"` + job +
			`","slot":"` + slot(s) + `","attempt":1,"start_delay_ms":` + delay + "}"
	}
	lines := strings.Join([]string{
		started("a", 0, "10"), started("b", 0, "400"), started("c", 0, "30"),
		started("a", 5, "20"), started("b", 5, "900"), started("b", 5, "1200"), // b@5 twice
		started("a", 4, "1"), started("c", 15, "1"), // not instants of the window
		`{"level":"WARN","msg":"slot.skipped","event":"slot.skipped","job":"c","slot":"` + slot(10) +
			`","reason":"late","missed":2,"first_slot":"` + slot(5) + `"}`,
		`{"level":"WARN","msg":"slot.skipped","event":"slot.skipped","job":"a","slot":"` + slot(10) + `","reason":"late"}`,
		`{"level":"WARN","msg":"slot.skipped","event":"slot.skipped","job":"b","slot":"` + slot(10) + `","reason":"late"}`,
	}, "\n")
	tl := newTallier([]string{"a", "b", "c"}, 5*time.Second, at(0), at(15))
	require.NoError(t, tl.read(strings.NewReader(lines)))
	tally := tl.result()
	require.Equal(t, 9, tally.Expected)
	require.Equal(t, map[string]int{"late": 4}, tally.NotRun, "c@5 and c@10 from one range line, a@10, b@10")
	require.Empty(t, tally.NotRun["unexplained"])

	b := tally.Bursts()
	require.Equal(t, BurstStats{Instants: 3, Due: 9, Run: 5, Duplicates: 1, P50: 30, P99: 1200,
		LastMax: 1200, LastMedian: 800, Silent: 1}, b, "latest starts 400 and 1200 ms; nothing at 10 s")
	require.InDelta(t, 4.0/9, b.Shed(), 1e-9)
	require.Equal(t, []string{"9", "5", "44.4 %", "1", "1.20 s (800 ms); 1 of 3 instants started nothing"}, b.Cells())

	require.Equal(t, 0.0, BurstStats{}.Shed(), "no slot due sheds none")
	require.Equal(t, BurstStats{Instants: 1, Due: 0, Silent: 1}, SlotTally{From: at(0), To: at(1)}.Bursts())
}

// TestBurstStatsEverySecond: at one slot per second every second is an
// instant, so the burst figures of the steady load are its latest start
// per second.
func TestBurstStatsEverySecond(t *testing.T) {
	tl := SlotTally{From: at(0), To: at(4), Every: time.Second, BySecond: map[int64]*SecondTally{}}
	for s, ds := range [][]float64{{1, 3}, {2}, {5, 4}, {9}} {
		tl.BySecond[at(float64(s)).Unix()] = &SecondTally{Delays: ds}
	}
	b := tl.Bursts()
	require.Equal(t, 9.0, b.LastMax)
	require.Equal(t, 4.0, b.LastMedian, "latest starts 2, 3, 5, 9: the mean of the middle two")
	require.Equal(t, 0, b.Silent)
}

// TestTallyWindowBursts: the tally's window opens on an instant (a multiple of the
// period) and holds whole periods covering the seconds asked for.
func TestTallyWindowBursts(t *testing.T) {
	base := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	from, to := burstWindow(base.Add(7*time.Second), 5*time.Second, 12)
	require.Equal(t, base.Add(10*time.Second), from)
	require.Equal(t, base.Add(25*time.Second), to, "12 s round up to three 5-s periods")
	from, to = burstWindow(base.Add(10*time.Second), 5*time.Second, 3)
	require.Equal(t, base.Add(10*time.Second), from, "already on an instant")
	require.Equal(t, base.Add(15*time.Second), to)
	from, to = burstWindow(base.Add(7*time.Second), time.Second, 20)
	require.Equal(t, base.Add(7*time.Second), from, "every second: the window as before")
	require.Equal(t, base.Add(27*time.Second), to)
}

// TestScaleBurstTableParse: with bursts the table's header and rows have
// the same number of cells, and the header names the burst columns; the
// side-by-side table likewise; every second keeps today's table.
func TestScaleBurstTableParse(t *testing.T) {
	p := ScalePoint{Jobs: 500, Replicas: 3, Nodes: 3, Overlap: "forbid", Every: 5}
	require.Equal(t, "*/5 * * * * *", p.schedule())
	require.Equal(t, "jobs=500_replicas=3_nodes=3_forbid_every=5", p.String())
	require.Equal(t, "* * * * * *", ScalePoint{}.schedule())
	require.Equal(t, 5*time.Second, p.period())

	r := ScaleResult{ScalePoint: p, Tally: SlotTally{From: at(0), To: at(10), Every: 5 * time.Second}}
	cells := func(s string) int { return strings.Count(s, "|") - 1 }
	table := ScaleTable([]ScaleResult{r})
	rows := strings.Split(table, "\n")
	require.Len(t, rows, 3)
	require.Contains(t, rows[0], "| last start after the instant, max (median) |")
	require.Equal(t, cells(rows[0]), cells(rows[1]))
	require.Equal(t, cells(rows[0]), cells(rows[2]))

	cmp := strings.Split(compareHeaderFor(5), "\n")
	row := CompareRow(p, scaleFigures{}, scaleFigures{})
	require.Equal(t, cells(cmp[0]), cells(cmp[1]))
	require.Equal(t, cells(cmp[0]), cells(row))

	steady := r
	steady.Every = 1
	require.Equal(t, ScaleHeader, steady.Header())
	require.Equal(t, CompareHeader, compareHeaderFor(1))
	require.Equal(t, cells(ScaleHeader[:strings.Index(ScaleHeader, "\n")]), cells(steady.Row()))
	require.Empty(t, burstLine(1, 20))
	require.Contains(t, burstLine(5, 12), "3 instants per window (15 s)")
}
