//go:build linux

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"time"
)

// The scale benchmark's exactly-once check, from the replicas' JSON logs
// alone (its jobs are log-plugin jobs: there is no ledger). Only the
// run.started and slot.skipped lines are decoded, so a 100,000-line log is
// read in well under a second.

// SlotTally is what the logs say about the slots of every job whose
// nominal time is in [From, To).
type SlotTally struct {
	From, To time.Time
	Jobs     int // jobs, all every-second
	Expected int // Jobs × whole seconds in [From, To)
	Runs     int // run.started lines for slots in the window
	Slots    int // distinct slots with at least one run.started
	// Duplicates lists "job slot ×n" for every slot started more than
	// once: any entry is a failure.
	Duplicates []string
	// NotRun counts expected slots without a run.started by the reason a
	// replica logged for them (slot.skipped); "unexplained" when none did.
	NotRun map[string]int
	// Delays are the start_delay_ms values of the window's run.started
	// lines, sorted.
	Delays []float64
}

// scaleLine is the part of a log line the tally reads.
type scaleLine struct {
	Event     string   `json:"event"`
	Job       string   `json:"job"`
	Slot      string   `json:"slot"`
	Reason    string   `json:"reason"`
	FirstSlot string   `json:"first_slot"`
	Missed    int      `json:"missed"`
	DelayMs   *float64 `json:"start_delay_ms"`
}

// skipOrder ranks reasons when replicas logged different ones for a slot
// that did not run: the most telling first.
var skipOrder = []string{"late", "no_quorum", "slow_lock", "claimed", "shutdown", "overlap", "paused", "held", "done"}

// TallySlots reads the log files and tallies the slots of jobs (every
// job runs every second) in [from, to).
func TallySlots(jobs []string, from, to time.Time, paths ...string) (SlotTally, error) {
	tl := newTallier(jobs, from, to)
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return SlotTally{}, err
		}
		err = tl.read(f)
		f.Close()
		if err != nil {
			return SlotTally{}, fmt.Errorf("%s: %w", p, err)
		}
	}
	return tl.result(), nil
}

type tallier struct {
	jobs     []string
	from, to time.Time
	starts   map[string]int                 // job \x00 unix second -> run.started lines
	skips    map[string]map[string]struct{} // same key -> reasons
	t        SlotTally
}

func newTallier(jobs []string, from, to time.Time) *tallier {
	return &tallier{jobs: jobs, from: from, to: to,
		starts: map[string]int{}, skips: map[string]map[string]struct{}{},
		t: SlotTally{From: from, To: to, Jobs: len(jobs), NotRun: map[string]int{}}}
}

func (tl *tallier) inWindow(t time.Time) bool { return !t.Before(tl.from) && t.Before(tl.to) }

func slotKeyOf(job string, t time.Time) string { return fmt.Sprintf("%s\x00%d", job, t.Unix()) }

func (tl *tallier) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		b := sc.Bytes()
		isStart := bytes.Contains(b, []byte(`"run.started"`))
		if !isStart && !bytes.Contains(b, []byte(`"slot.skipped"`)) {
			continue
		}
		var l scaleLine
		if err := json.Unmarshal(b, &l); err != nil {
			continue // not a JSON line (a panic trace): not ours to judge here
		}
		slot, err := time.Parse(time.RFC3339, l.Slot)
		if err != nil {
			continue // manual runs
		}
		switch l.Event {
		case "run.started":
			if !tl.inWindow(slot) {
				continue
			}
			tl.t.Runs++
			tl.starts[slotKeyOf(l.Job, slot)]++
			if l.DelayMs != nil {
				tl.t.Delays = append(tl.t.Delays, *l.DelayMs)
			}
		case "slot.skipped":
			// A late line may stand for a range of missed slots: every
			// second from first_slot to slot (the jobs run every second).
			first := slot
			if l.Missed > 1 {
				if f, err := time.Parse(time.RFC3339, l.FirstSlot); err == nil {
					first = f
				}
			}
			for t := first; !t.After(slot); t = t.Add(time.Second) {
				if tl.inWindow(t) {
					k := slotKeyOf(l.Job, t)
					if tl.skips[k] == nil {
						tl.skips[k] = map[string]struct{}{}
					}
					tl.skips[k][l.Reason] = struct{}{}
				}
			}
		}
	}
	return sc.Err()
}

func (tl *tallier) result() SlotTally {
	t := tl.t
	for _, job := range tl.jobs {
		for s := tl.from; s.Before(tl.to); s = s.Add(time.Second) {
			t.Expected++
			k := slotKeyOf(job, s)
			if n := tl.starts[k]; n > 0 {
				t.Slots++
				if n > 1 {
					t.Duplicates = append(t.Duplicates, fmt.Sprintf("%s %s ×%d", job, stamp(s), n))
				}
				continue
			}
			t.NotRun[pickReason(tl.skips[k])]++
		}
	}
	sort.Strings(t.Duplicates)
	slices.Sort(t.Delays)
	return t
}

func pickReason(rs map[string]struct{}) string {
	for _, r := range skipOrder {
		if _, ok := rs[r]; ok {
			return r
		}
	}
	var other []string
	for r := range rs {
		other = append(other, r)
	}
	if len(other) == 0 {
		return "unexplained"
	}
	sort.Strings(other)
	return other[0]
}

// Missed is the number of expected slots that did not run.
func (t SlotTally) Missed() int { return t.Expected - t.Slots }

// Percentile is the nearest-rank p-th percentile (0..100) of the start
// delays in ms, 0 when there are none.
func (t SlotTally) Percentile(p float64) float64 {
	if len(t.Delays) == 0 {
		return 0
	}
	i := int(p/100*float64(len(t.Delays)-1) + 0.5)
	return t.Delays[i]
}

// Verdict is the table's "every slot once" cell.
func (t SlotTally) Verdict() string {
	if len(t.Duplicates) > 0 {
		return fmt.Sprintf("**NO: %d slots ran twice**", len(t.Duplicates))
	}
	if t.Missed() == 0 {
		return fmt.Sprintf("yes (%s checked)", thousands(t.Expected))
	}
	var rs []string
	for r, n := range t.NotRun {
		rs = append(rs, fmt.Sprintf("%s %s", r, thousands(n)))
	}
	sort.Strings(rs)
	return fmt.Sprintf("no duplicate; %.1f %% not run (%s)",
		100*float64(t.Missed())/float64(t.Expected), strings.Join(rs, ", "))
}

// thousands formats n with commas: 17,000.
func thousands(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
