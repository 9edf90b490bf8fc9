package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/internal/config"
	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler"
)

// The log bytes a fleet writes per slot it runs, at the command's
// default log settings (log.level info, log.format auto: JSON on a pipe).
// Bytes do not depend on the CPU: the replicas run in a synctest bubble
// on one in-process store. The cases' bounds hold at the defaults; the
// flags measure other loads (no bound then):
//
//	go test ./cmd/cli -run TestLogBytesPerRunSlot -count=1 -v
//	go test ./cmd/cli -run TestLogBytesPerRunSlot/custom -count=1 -v -logbytes.level debug -logbytes.jobs 100 \
//	    -logbytes.job 'plugin: exec, params: {command: [sh, -c, "echo done"]}'

var (
	logBytesJobs  = flag.Int("logbytes.jobs", 0, "TestLogBytesPerRunSlot/custom: every-second jobs (0: no custom case)")
	logBytesLevel = flag.String("logbytes.level", "info", "TestLogBytesPerRunSlot/custom: log.level")
	logBytesJob   = flag.String("logbytes.job", "plugin: log, params: {message: x}",
		"TestLogBytesPerRunSlot/custom: every job's plugin and params, YAML inside a job's flow mapping")
)

// lineCounter counts the bytes and lines the replicas write per event,
// for the lines whose slot is in [from, to).
type lineCounter struct {
	mu       sync.Mutex
	buf      bytes.Buffer
	from, to time.Time
}

func (c *lineCounter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Write(p)
}

// logTally is what the lines of the window's slots cost.
type logTally struct {
	runs   int // run.started lines
	bytes  int // bytes of every line naming a slot in the window
	others int // of which written by a replica that did not run the slot
	// lines and byEv count the lines and their bytes per event (message
	// when no event), prefixed "other " for a replica that did not run
	// the slot; sample is one line of each.
	lines, byEv map[string]int
	sample      map[string]string
}

// slotLine is one line naming a slot, and its size.
type slotLine struct {
	Event, Job, Slot, Replica, Msg string
	text                           string
}

func (c *lineCounter) tally(t *testing.T) logTally {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var ls []slotLine
	winner := map[string]string{} // job and slot -> the replica that started its run
	sc := bufio.NewScanner(bytes.NewReader(c.buf.Bytes()))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var l slotLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("log line is not JSON: %q: %v", sc.Text(), err)
		}
		slot, err := time.Parse(time.RFC3339, l.Slot)
		if err != nil || slot.Before(c.from) || !slot.Before(c.to) {
			continue
		}
		l.text = sc.Text()
		ls = append(ls, l)
		if l.Event == "run.started" {
			winner[l.Job+" "+l.Slot] = l.Replica
		}
	}
	out := logTally{runs: len(winner), lines: map[string]int{}, byEv: map[string]int{}, sample: map[string]string{}}
	for _, l := range ls {
		key, n := l.Event, len(l.text)+1
		if key == "" {
			key = l.Msg
		}
		if winner[l.Job+" "+l.Slot] != l.Replica {
			key = "other " + key
			out.others += n
		}
		out.bytes += n
		out.lines[key]++
		out.byEv[key] += n
		if _, ok := out.sample[key]; !ok {
			out.sample[key] = l.text
		}
	}
	return out
}

// logBytesConfig is the scale benchmark's configuration for n jobs of
// plugin and params job, with Redis nodes named (their defaults apply)
// though the test swaps in an in-process store.
func logBytesConfig(t *testing.T, n int, job string) *config.Config {
	var b strings.Builder
	b.WriteString("redis:\n  nodes: [{addr: 'a:6379'}, {addr: 'b:6379'}, {addr: 'c:6379'}]\n")
	b.WriteString("lock: {ttl: 10s}\njobs:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {name: s%05d, schedule: '* * * * * *', misfire: {policy: skip}, %s}\n", i, job)
	}
	path := filepath.Join(t.TempDir(), "slotlock.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// logBytesCase is a load and the bound of its log bytes per run slot:
// every line, on every replica, that names a slot, divided by the slots
// run — the run's own lines on its winner and whatever the others write
// about the slot.
type logBytesCase struct {
	name, level, job string
	jobs, max        int // max 0: measured, not bounded
}

// TestLogBytesPerRunSlot: three replicas of the default command run
// every-second jobs; every slot of the window runs once, the replicas
// that did not run a slot write nothing about it at info, and the bytes
// per run slot stay within the bound. log_job is e2e TestScale's load
// (log-plugin jobs named s00000…, message "x", replicas r1…): three lines
// per run. silent_exec is a command that prints nothing: the two run lines
// alone, 20 jobs for the processes' sake (the bytes per slot do not depend
// on the number of jobs).
func TestLogBytesPerRunSlot(t *testing.T) {
	cases := []logBytesCase{
		{name: "log_job", level: "info", job: "plugin: log, params: {message: x}", jobs: 1000, max: 709},
		{name: "silent_exec", level: "info", job: `plugin: exec, params: {command: ["true"]}`, jobs: 20, max: 495},
	}
	if *logBytesJobs > 0 {
		cases = append(cases, logBytesCase{name: "custom", level: *logBytesLevel, job: *logBytesJob, jobs: *logBytesJobs})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { synctest.Test(t, func(t *testing.T) { c.check(t, c.fleet(t)) }) })
	}
}

// fleet runs three replicas of c's load for 20 s of the bubble's clock
// and returns what they wrote about the slots of [10 s, 15 s).
func (c logBytesCase) fleet(t *testing.T) *lineCounter {
	cfg := logBytesConfig(t, c.jobs, c.job)
	start := time.Now()
	w := &lineCounter{from: start.Add(10 * time.Second), to: start.Add(15 * time.Second)}
	store := locking.NewLocal(locking.Options{Replica: "local"})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("r%d", i)
		log, err := newLogger(w, "auto", c.level, name)
		if err != nil {
			t.Fatal(err)
		}
		sc := cfg.SchedulerConfig()
		sc.Replica, sc.Locker, sc.Logger = name, store, log
		s, err := scheduler.New(sc)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			if err := s.Run(ctx); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		})
	}
	time.Sleep(20 * time.Second)
	cancel()
	wg.Wait()
	return w
}

// check reports the tally of w's lines and holds c's bound.
func (c logBytesCase) check(t *testing.T, w *lineCounter) {
	tl := w.tally(t)
	want := c.jobs * int(w.to.Sub(w.from)/time.Second)
	if tl.runs != want || tl.lines["run.started"] != want {
		t.Errorf("%d slots started in %d run.started lines in the window, want %d (every slot once)",
			tl.runs, tl.lines["run.started"], want)
	}
	per := float64(tl.bytes) / float64(max(tl.runs, 1))
	t.Logf("%d jobs {%s}, 3 replicas, log.level %s: %d slots run, %d bytes of lines naming them: %.1f bytes per run slot, %.1f of them by the replicas that did not run it",
		c.jobs, c.job, c.level, tl.runs, tl.bytes, per, float64(tl.others)/float64(max(tl.runs, 1)))
	evs := make([]string, 0, len(tl.lines))
	for ev := range tl.lines {
		evs = append(evs, ev)
	}
	sort.Strings(evs)
	for _, ev := range evs {
		t.Logf("  %-18s %6d lines, %4.1f per run slot, %6.1f bytes per run slot; e.g. %s", ev, tl.lines[ev],
			float64(tl.lines[ev])/float64(max(tl.runs, 1)), float64(tl.byEv[ev])/float64(max(tl.runs, 1)), tl.sample[ev])
	}
	if c.level == "info" && tl.others != 0 {
		t.Errorf("%d bytes at info from replicas that did not run the slot: want none (held and done are debug)", tl.others)
	}
	if c.max > 0 && per > float64(c.max) {
		t.Errorf("%.1f log bytes per run slot, want at most %d", per, c.max)
	}
}
