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
// run.started, run.abandoned, slot.skipped and slot.missed lines are
// decoded, so a 100,000-line log is read in well under a second.

// SlotTally is what the logs say about the slots of every job whose
// nominal time is in [From, To).
type SlotTally struct {
	From, To time.Time
	Every    time.Duration // every job's period: its slots fall on the same instants
	Jobs     int           // jobs, all of period Every
	Expected int           // Jobs × instants in [From, To)
	Runs     int           // run.started lines for slots in the window
	Slots    int           // distinct slots with at least one run.started
	// Duplicates lists "job slot ×n" for every slot started more than
	// once: any entry is a failure.
	Duplicates []string
	// NotRun counts expected slots without a run.started by the reason a
	// replica logged for them (slot.skipped, or slot.missed as
	// "missed/<reason>"); "unexplained" when none did: a failure.
	NotRun map[string]int
	// Phantoms lists "job slot" for every run.abandoned line (any slot)
	// whose slot has no run.started line anywhere: a run reported that
	// never started. Any entry is a failure.
	Phantoms []string
	// Delays are the start_delay_ms values of the window's run.started
	// lines, sorted.
	Delays []float64
	// Unreachable counts "locking: redis node unreachable" warnings (any
	// time): with healthy nodes each is a false alarm from the replica's
	// own queueing.
	Unreachable int
	// BySecond holds, per slot second (Unix) in the window, the start
	// delays logged for it and the reasons its slots did not run: for
	// comparing the seconds of one run that differ in a condition (a page
	// storm on or off), and for the bursts' instants (BurstStats).
	BySecond map[int64]*SecondTally
}

// SecondTally is what the logs say about the slots of one second.
type SecondTally struct {
	Delays []float64
	NotRun map[string]int
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
var skipOrder = []string{"late", "no_quorum", "slow_lock", "claimed", "shutdown", "overlap", "paused", "held", "done",
	"missed/unknown", "missed/no_quorum", "missed/no_replica", "missed/not_started"}

// TallySlots reads the log files and tallies the slots of jobs (every
// job runs every second) in [from, to).
func TallySlots(jobs []string, from, to time.Time, paths ...string) (SlotTally, error) {
	return TallySlotsEvery(jobs, time.Second, from, to, paths...)
}

// TallySlotsEvery is TallySlots for jobs that all run every period, at
// the same instants: from, from+every, … before to.
func TallySlotsEvery(jobs []string, every time.Duration, from, to time.Time, paths ...string) (SlotTally, error) {
	if every <= 0 {
		return SlotTally{}, fmt.Errorf("tally: period %v is not positive", every)
	}
	tl := newTallier(jobs, every, from, to)
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
	every    time.Duration
	starts   map[string]int                 // job \x00 unix second -> run.started lines (in the window)
	started  map[string]bool                // same key -> a run.started line (any slot)
	abandons map[string]string              // same key -> "job slot" of a run.abandoned line
	skips    map[string]map[string]struct{} // same key -> reasons
	t        SlotTally
}

func newTallier(jobs []string, every time.Duration, from, to time.Time) *tallier {
	return &tallier{jobs: jobs, from: from, to: to, every: every,
		starts: map[string]int{}, skips: map[string]map[string]struct{}{},
		started: map[string]bool{}, abandons: map[string]string{},
		t: SlotTally{From: from, To: to, Every: every, Jobs: len(jobs), NotRun: map[string]int{}}}
}

// second is the tally of slot second t, made when first needed.
func (tl *tallier) second(t time.Time) *SecondTally {
	if tl.t.BySecond == nil {
		tl.t.BySecond = map[int64]*SecondTally{}
	}
	sec := tl.t.BySecond[t.Unix()]
	if sec == nil {
		sec = &SecondTally{NotRun: map[string]int{}}
		tl.t.BySecond[t.Unix()] = sec
	}
	return sec
}

func (tl *tallier) inWindow(t time.Time) bool { return !t.Before(tl.from) && t.Before(tl.to) }

func slotKeyOf(job string, t time.Time) string { return fmt.Sprintf("%s\x00%d", job, t.Unix()) }

func (tl *tallier) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		b := sc.Bytes()
		if bytes.Contains(b, []byte(`redis node unreachable`)) {
			tl.t.Unreachable++
			continue
		}
		if !bytes.Contains(b, []byte(`"run.started"`)) && !bytes.Contains(b, []byte(`"slot.skipped"`)) &&
			!bytes.Contains(b, []byte(`"run.abandoned"`)) && !bytes.Contains(b, []byte(`"slot.missed"`)) {
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
		case "run.abandoned":
			tl.abandons[slotKeyOf(l.Job, slot)] = l.Job + " " + stamp(slot)
		case "slot.missed":
			if tl.inWindow(slot) {
				tl.skip(slotKeyOf(l.Job, slot), "missed/"+l.Reason)
			}
		case "run.started":
			tl.started[slotKeyOf(l.Job, slot)] = true
			if !tl.inWindow(slot) {
				continue
			}
			tl.t.Runs++
			tl.starts[slotKeyOf(l.Job, slot)]++
			if l.DelayMs != nil {
				tl.t.Delays = append(tl.t.Delays, *l.DelayMs)
				sec := tl.second(slot)
				sec.Delays = append(sec.Delays, *l.DelayMs)
			}
		case "slot.skipped":
			// A late line may stand for a range of missed slots: every
			// instant from first_slot to slot.
			first := slot
			if l.Missed > 1 {
				if f, err := time.Parse(time.RFC3339, l.FirstSlot); err == nil {
					first = f
				}
			}
			for t := first; !t.After(slot); t = t.Add(tl.every) {
				if tl.inWindow(t) {
					tl.skip(slotKeyOf(l.Job, t), l.Reason)
				}
			}
		}
	}
	return sc.Err()
}

// skip notes a reason logged for slot key k.
func (tl *tallier) skip(k, reason string) {
	if tl.skips[k] == nil {
		tl.skips[k] = map[string]struct{}{}
	}
	tl.skips[k][reason] = struct{}{}
}

func (tl *tallier) result() SlotTally {
	t := tl.t
	for _, job := range tl.jobs {
		for s := tl.from; s.Before(tl.to); s = s.Add(tl.every) {
			t.Expected++
			k := slotKeyOf(job, s)
			if n := tl.starts[k]; n > 0 {
				t.Slots++
				if n > 1 {
					t.Duplicates = append(t.Duplicates, fmt.Sprintf("%s %s ×%d", job, stamp(s), n))
				}
				continue
			}
			r := pickReason(tl.skips[k])
			t.NotRun[r]++
			tl.second(s).NotRun[r]++
		}
	}
	t.BySecond = tl.t.BySecond
	for k, js := range tl.abandons {
		if !tl.started[k] {
			t.Phantoms = append(t.Phantoms, js)
		}
	}
	sort.Strings(t.Duplicates)
	sort.Strings(t.Phantoms)
	slices.Sort(t.Delays)
	for _, sec := range t.BySecond {
		slices.Sort(sec.Delays)
	}
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
	if len(t.Phantoms) > 0 {
		return fmt.Sprintf("**NO: %d run.abandoned for runs that never started**", len(t.Phantoms))
	}
	if n := t.NotRun["unexplained"]; n > 0 {
		return fmt.Sprintf("**NO: %d slots not run and not explained**", n)
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
