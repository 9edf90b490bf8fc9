// Package local tests deploy/local/run.sh, the one-command local cluster:
// three redis-server nodes and three slotlock replicas on loopback.
package local

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/slotlock/slotlock/internal/config"
	_ "github.com/slotlock/slotlock/jobs" // the built-in plugins the demo uses
)

// A bounded run: every slot of every demo job that fell while the cluster
// was up ran exactly once across the three replicas, no slot ran twice,
// and nothing is left running afterwards.
func TestBoundedRunRunsEachSlotOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 3 redis-server and 3 replicas for about 20 s")
	}
	requireTools(t, "bash", "redis-server", "go")
	work := t.TempDir()
	// The script builds slotlock itself here, as a user's first run does.
	c := startScript(t, work, "--duration", "20s")
	if err := c.wait(4 * time.Minute); err != nil {
		t.Fatalf("run.sh --duration 20s: %v\nstderr:\n%s", err, c.stderr.String())
	}
	keepBinary(t, filepath.Join(work, "bin", "slotlock"))
	checkMergedOutput(t, c.stdout.String())
	a := readAudit(t, work)
	a.checkExactlyOnce(t, work)
	checkNothingLeft(t, work)
	checkStopOrder(t, work, a)
}

// Ctrl-C: the script stops the replicas first (they exit 0 after a clean
// shutdown), then Redis, and exits 0 with nothing left running.
func TestInterruptStopsEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 3 redis-server and 3 replicas")
	}
	requireTools(t, "bash", "redis-server", "go")
	work := t.TempDir()
	c := startScript(t, work, "--bin", slotlockBinary(t))
	deadline := time.Now().Add(time.Minute)
	for !exists(filepath.Join(work, "up")) {
		if time.Now().After(deadline) || c.exited() {
			t.Fatalf("cluster not up within a minute\nstderr:\n%s", c.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(4 * time.Second) // a few slots
	if err := c.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := c.wait(time.Minute); err != nil {
		t.Fatalf("run.sh after SIGINT: %v\nstderr:\n%s", err, c.stderr.String())
	}
	a := readAudit(t, work)
	if a.started == 0 {
		t.Fatal("no run.started before the interrupt")
	}
	a.checkAtMostOnce(t)
	checkNothingLeft(t, work)
	checkStopOrder(t, work, a)
}

// ---- running the script ------------------------------------------------------

type script struct {
	cmd            *exec.Cmd
	stdout, stderr syncBuffer
	done           chan struct{} // closed when the script has exited
	err            error         // its exit, valid after done
}

func startScript(t *testing.T, work string, args ...string) *script {
	t.Helper()
	c := &script{done: make(chan struct{})}
	c.cmd = exec.Command("bash", append([]string{"deploy/local/run.sh", "--workdir", work}, args...)...)
	c.cmd.Dir = repoRoot(t)
	c.cmd.Stdout, c.cmd.Stderr = &c.stdout, &c.stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.err = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		// On a failed test: stop the script and whatever it started.
		if !c.exited() {
			_ = c.cmd.Process.Kill()
			<-c.done
		}
		for _, p := range readPIDs(t, work) {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	})
	return c
}

func (c *script) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func (c *script) wait(d time.Duration) error {
	select {
	case <-c.done:
		return c.err
	case <-time.After(d):
		return fmt.Errorf("still running after %v", d)
	}
}

var (
	buildMu   sync.Mutex
	buildPath string // a slotlock binary outside any test's temporary directory
)

// keepBinary remembers the binary run.sh built, for the other tests.
func keepBinary(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("run.sh did not leave its binary at %s: %v", path, err)
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if buildPath != "" {
		return
	}
	dir, err := os.MkdirTemp("", "slotlock-local-bin")
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "slotlock"), b, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	buildPath = filepath.Join(dir, "slotlock")
}

// slotlockBinary returns the binary an earlier test's run.sh built, or
// builds ./cmd/slotlock the way run.sh does.
func slotlockBinary(t *testing.T) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if buildPath != "" {
		return buildPath
	}
	dir, err := os.MkdirTemp("", "slotlock-local-bin")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "slotlock")
	cmd := exec.Command("go", "build", "-trimpath", "-o", path, "./cmd/slotlock")
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	buildPath = path
	return path
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func requireTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found on PATH (redis-server: apt-get install -y redis-server)", tool)
		}
	}
}

// ---- what the replicas logged ----------------------------------------------

type record struct {
	Time    time.Time `json:"time"`
	Msg     string    `json:"msg"`
	Event   string    `json:"event"`
	Job     string    `json:"job"`
	Slot    string    `json:"slot"`
	Replica string    `json:"replica"`
	Reason  string    `json:"reason"`
	Error   string    `json:"error"`
}

type audit struct {
	first, last map[string]time.Time // per replica
	// events[job][slot] lists every slot and run event of that slot.
	events  map[string]map[string][]record
	started int
}

func readAudit(t *testing.T, work string) *audit {
	t.Helper()
	a := &audit{first: map[string]time.Time{}, last: map[string]time.Time{}, events: map[string]map[string][]record{}}
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("replica-%d", i)
		f, err := os.Open(filepath.Join(work, name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var r record
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Errorf("%s: not a JSON log line: %q", name, sc.Text())
				continue
			}
			if r.Replica != "" && r.Replica != name {
				t.Errorf("%s logged replica %q", name, r.Replica)
			}
			if _, ok := a.first[name]; !ok {
				a.first[name] = r.Time
			}
			a.last[name] = r.Time
			if r.Job == "" || r.Slot == "" {
				continue
			}
			r.Replica = name
			if a.events[r.Job] == nil {
				a.events[r.Job] = map[string][]record{}
			}
			a.events[r.Job][r.Slot] = append(a.events[r.Job][r.Slot], r)
			if r.Event == "run.started" {
				a.started++
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			t.Fatal(err)
		}
		if _, ok := a.first[name]; !ok {
			t.Fatalf("%s logged nothing", name)
		}
	}
	return a
}

// checkAtMostOnce: no slot of any job started on two replicas (or twice).
func (a *audit) checkAtMostOnce(t *testing.T) {
	t.Helper()
	for job, slots := range a.events {
		for slot, evs := range slots {
			var who []string
			for _, e := range evs {
				if e.Event == "run.started" {
					who = append(who, e.Replica)
				}
			}
			if len(who) > 1 {
				t.Errorf("%s slot %s started %d times: %v", job, slot, len(who), who)
			}
		}
	}
}

// checkExactlyOnce: every slot of every demo job between the first
// replica's start and the beginning of the stop (with a margin) ran once
// and succeeded.
func (a *audit) checkExactlyOnce(t *testing.T, work string) {
	t.Helper()
	a.checkAtMostOnce(t)
	cfg, err := config.Load(filepath.Join(repoRoot(t), "deploy/local/demo.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var from time.Time
	for _, ft := range a.first {
		if from.IsZero() || ft.Before(from) {
			from = ft
		}
	}
	from = from.Add(2 * time.Second)
	to := stopTime(t, work).Add(-2 * time.Second)
	if to.Sub(from) < 10*time.Second {
		t.Fatalf("the cluster ran only %v before the stop", to.Sub(from))
	}
	perReplica := map[string]int{}
	expected := 0
	for _, job := range cfg.Jobs {
		for s := job.Schedule.Next(from); s.Before(to); s = job.Schedule.Next(s) {
			expected++
			slot := s.UTC().Format(time.RFC3339)
			var started, succeeded []string
			for _, e := range a.events[job.Name][slot] {
				switch e.Event {
				case "run.started":
					started = append(started, e.Replica)
				case "run.succeeded":
					succeeded = append(succeeded, e.Replica)
				}
			}
			if len(started) != 1 || len(succeeded) != 1 || started[0] != succeeded[0] {
				t.Errorf("%s slot %s: started on %v, succeeded on %v; want once on one replica; its lines:\n%s",
					job.Name, slot, started, succeeded, describe(a.events[job.Name][slot]))
				continue
			}
			perReplica[started[0]]++
		}
	}
	if expected < 10 {
		t.Fatalf("only %d demo slots in the window; the schedules changed?", expected)
	}
	t.Logf("%d slots between %s and %s ran once each; runs per replica: %v",
		expected, from.Format(time.TimeOnly), to.Format(time.TimeOnly), perReplica)
}

func describe(evs []record) string {
	if len(evs) == 0 {
		return "  (no line mentions this slot)"
	}
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "  %s %s %s reason=%q error=%q\n", e.Time.Format(time.TimeOnly), e.Replica, e.Event, e.Reason, e.Error)
	}
	return b.String()
}

func stopTime(t *testing.T, work string) time.Time {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(work, "stopping"))
	if err != nil {
		t.Fatalf("run.sh did not record when it began to stop: %v", err)
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Unix(0, int64(f*1e9))
}

// checkMergedOutput: the script showed every replica's lines, prefixed.
func checkMergedOutput(t *testing.T, out string) {
	t.Helper()
	for i := 1; i <= 3; i++ {
		prefix := fmt.Sprintf("replica-%d | {", i)
		if !strings.Contains(out, prefix) {
			t.Errorf("merged output has no line starting %q", prefix)
		}
	}
}

// ---- nothing left running, in the right order --------------------------------

type started struct {
	name string
	pid  int
}

func readPIDs(t *testing.T, work string) []started {
	b, err := os.ReadFile(filepath.Join(work, "pids"))
	if err != nil {
		return nil
	}
	var ps []started
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		name, pid, ok := strings.Cut(line, " ")
		if n, err := strconv.Atoi(pid); ok && err == nil {
			ps = append(ps, started{name, n})
		}
	}
	return ps
}

func checkNothingLeft(t *testing.T, work string) {
	t.Helper()
	ps := readPIDs(t, work)
	names := map[string]bool{}
	for _, p := range ps {
		kind, _, _ := strings.Cut(p.name, "-")
		names[kind] = true
		if err := syscall.Kill(p.pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("%s (pid %d) is still running after run.sh exited", p.name, p.pid)
		}
	}
	if len(ps) < 7 || !names["redis"] || !names["replica"] || !names["display"] {
		t.Errorf("pids file lists %v; want 3 redis, 3 replicas and the display", ps)
	}
	// And no process of any kind still refers to the work directory.
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte(work)) {
			t.Errorf("%s still runs: %q", filepath.Dir(p), bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
		}
	}
}

// redisTime matches redis-server's log timestamp ("29 Nov 2026 23:44:38.123").
var redisTime = regexp.MustCompile(`\d{1,2} \w{3} \d{4} \d{2}:\d{2}:\d{2}\.\d{3}`)

// checkStopOrder: Redis began to shut down only after the last replica's
// last line: the replicas stopped with their locks still reachable.
func checkStopOrder(t *testing.T, work string, a *audit) {
	t.Helper()
	var lastReplica time.Time
	for _, l := range a.last {
		if l.After(lastReplica) {
			lastReplica = l
		}
	}
	for _, n := range []string{"a", "b", "c"} {
		b, err := os.ReadFile(filepath.Join(work, "redis-"+n+".log"))
		if err != nil {
			t.Fatal(err)
		}
		var shutdown time.Time
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.Contains(line, "shutdown") && !strings.Contains(line, "SIGTERM") {
				continue
			}
			if m := redisTime.FindString(line); m != "" {
				if ts, err := time.ParseInLocation("2 Jan 2006 15:04:05.000", m, time.Local); err == nil {
					shutdown = ts
					break
				}
			}
		}
		if shutdown.IsZero() {
			t.Errorf("redis-%s logged no shutdown:\n%s", n, b)
			continue
		}
		if shutdown.Before(lastReplica) {
			t.Errorf("redis-%s began to shut down at %s, before the replicas' last line at %s",
				n, shutdown.Format(time.StampMilli), lastReplica.Format(time.StampMilli))
		}
	}
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

// syncBuffer is a bytes.Buffer safe for the writer goroutines of exec.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
