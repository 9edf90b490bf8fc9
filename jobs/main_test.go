package jobs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/slotlock/slotlock/internal/secrettest"
)

// The test binary doubles as the program the exec plugin runs: with
// JOBS_TEST_HELPER set it acts as a helper instead of running tests.
func TestMain(m *testing.M) {
	if mode := os.Getenv("JOBS_TEST_HELPER"); mode != "" {
		os.Exit(helperMain(mode))
	}
	code := m.Run()
	// The secrets scan of everything captured, then the goroutine check.
	os.Exit(secrettest.AfterTests(code))
}

func helperMain(mode string) int {
	switch mode {
	case "args": // print argv, cwd and the environment as JSON
		wd, _ := os.Getwd()
		env := map[string]string{}
		for _, kv := range os.Environ() {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		json.NewEncoder(os.Stdout).Encode(map[string]any{"args": os.Args[1:], "cwd": wd, "env": env})
		return 0
	case "stale": // the fence recipes' refusal (examples/fenced-exec)
		fmt.Fprintln(os.Stderr, "stale fencing token 7 for report: token 8 was already accepted (a newer run wrote first); nothing written")
		return 75
	case "fail":
		fmt.Fprintln(os.Stdout, "some output")
		fmt.Fprintln(os.Stderr, "first line")
		fmt.Fprintln(os.Stderr, "boom: disk full")
		return 3
	case "flood": // 100 KiB of stdout, then a marker
		line := strings.Repeat("x", 1023) + "\n"
		for range 100 {
			io.WriteString(os.Stdout, line)
		}
		io.WriteString(os.Stdout, "END-OF-OUTPUT")
		io.WriteString(os.Stderr, "é"+strings.Repeat("é", 3000)) // multi-byte, cut inside a rune
		return 0
	case "tree": // start a TERM-ignoring grandchild, record pids, then wait
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), "JOBS_TEST_HELPER=stubborn", "GORACE=atexit_sleep_ms=0")
		child.Stdout = os.Stdout // the grandchild holds the pipe too
		child.Stderr = os.Stderr
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		os.WriteFile(os.Getenv("PID_FILE")+".child", []byte(strconv.Itoa(os.Getpid())), 0o644)
		if os.Getenv("LEADER_EXITS") != "" {
			// wait until the grandchild is set up, then leave it behind
			waitFile(os.Getenv("PID_FILE") + ".grandchild")
			fmt.Println("leader done")
			return 0
		}
		child.Wait()
		return 0
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
		os.WriteFile(os.Getenv("PID_FILE")+".tmp", []byte(strconv.Itoa(os.Getpid())), 0o644)
		os.Rename(os.Getenv("PID_FILE")+".tmp", os.Getenv("PID_FILE")+".grandchild")
		for {
			time.Sleep(time.Hour)
		}
	}
	if h, ok := extraHelpers[mode]; ok {
		return h()
	}
	fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
	return 2
}

// extraHelpers are helper modes defined beside the tests that use them.
var extraHelpers = map[string]func() int{}

func waitFile(path string) string {
	for {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			return string(b)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// logBuffer captures JSON log lines, safely across goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	secrettest.Capture(p)
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Lines decodes every captured line.
func (b *logBuffer) Lines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line is not JSON: %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// Event returns the single line with the given event.
func (b *logBuffer) Event(t *testing.T, event string) map[string]any {
	t.Helper()
	var found []map[string]any
	for _, m := range b.Lines(t) {
		if m["event"] == event {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one %q line, got %d in:\n%s", event, len(found), b.String())
	}
	return found[0]
}

func testRun(t *testing.T) (Run, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return Run{
		Job:          "nightly-report",
		Slot:         time.Date(2026, 11, 29, 10, 0, 5, 0, time.UTC),
		RunID:        "r-123",
		Replica:      "replica-a",
		FencingToken: 42,
		Attempt:      2,
		Logger:       logger.With("job", "nightly-report"),
	}, logs
}

func mustJob(t *testing.T, plugin string, params map[string]any) Job {
	t.Helper()
	f, ok := Lookup(plugin)
	if !ok {
		t.Fatalf("plugin %q not registered", plugin)
	}
	j, err := f(params)
	if err != nil {
		t.Fatalf("%s factory: %v", plugin, err)
	}
	return j
}
