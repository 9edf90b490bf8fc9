package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// writeRecorder keeps each write it got; while gate is set, a write waits
// for it to close.
type writeRecorder struct {
	mu     sync.Mutex
	gate   chan struct{}
	writes []string
	err    error
}

func (w *writeRecorder) Write(p []byte) (int, error) {
	w.mu.Lock()
	gate := w.gate
	w.mu.Unlock()
	if gate != nil {
		<-gate
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, string(p))
	return len(p), w.err
}

func (w *writeRecorder) all() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.writes, "")
}

// A line is on the output when the logging call returns, alone when no
// other line waits, with the logger's attributes.
func TestGroupWriterLineOutOnReturn(t *testing.T) {
	out := &writeRecorder{}
	log, err := newLogger(out, "json", "info", "r1")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		log.Info("slot.started", "job", fmt.Sprint("j", i))
		if n := len(out.writes); n != i+1 {
			t.Fatalf("after line %d: %d writes, want %d", i, n, i+1)
		}
		var line map[string]any
		if err := json.Unmarshal([]byte(out.writes[i]), &line); err != nil {
			t.Fatalf("write %d %q: %v", i, out.writes[i], err)
		}
		if line["job"] != fmt.Sprint("j", i) || line["replica"] != "r1" {
			t.Fatalf("write %d: %v", i, line)
		}
	}
}

// Lines logged while a write is under way wait for it and then go out
// together in one write, each whole, none returned before it is out.
func TestGroupWriterCommitsWaitingLinesTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		out := &writeRecorder{gate: gate}
		log, err := newLogger(out, "json", "info", "r1")
		if err != nil {
			t.Fatal(err)
		}
		var returned atomic.Int32
		var wg sync.WaitGroup
		wg.Go(func() { log.Info("first"); returned.Add(1) })
		synctest.Wait() // the first line's write is under way, held by the gate
		const n = 50
		for i := range n {
			wg.Go(func() { log.Info("waiting", "i", i); returned.Add(1) })
		}
		synctest.Wait()
		if r := returned.Load(); r != 0 {
			t.Fatalf("%d logging calls returned before their line was written", r)
		}
		close(gate)
		wg.Wait()
		if len(out.writes) != 2 {
			t.Fatalf("%d writes, want 2: the first line, then the %d that waited for it", len(out.writes), n)
		}
		if !strings.Contains(out.writes[0], `"msg":"first"`) || strings.Count(out.writes[0], "\n") != 1 {
			t.Fatalf("first write %q", out.writes[0])
		}
		seen := map[float64]bool{}
		for l := range strings.Lines(out.writes[1]) {
			var line map[string]any
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatalf("a line of the second write is not whole: %q: %v", l, err)
			}
			seen[line["i"].(float64)] = true
		}
		if len(seen) != n {
			t.Fatalf("the second write holds %d of the %d waiting lines", len(seen), n)
		}
	})
}

// A failed write is the logging call's error, and the lines after it
// still go out.
func TestGroupWriterReturnsWriteError(t *testing.T) {
	out := &writeRecorder{err: errors.New("pipe closed")}
	g := newGroupWriter(out)
	h := groupHandler{jsonHandler(g, 0), g}
	log := slog.New(h)
	if err := h.Handle(t.Context(), slog.NewRecord(time.Now(), slog.LevelInfo, "lost", 0)); err == nil || err.Error() != "pipe closed" {
		t.Fatalf("Handle: %v, want the write's error", err)
	}
	out.mu.Lock()
	out.err = nil
	out.mu.Unlock()
	log.Info("next")
	if got := out.all(); !strings.Contains(got, `"msg":"next"`) {
		t.Fatalf("output %q lacks the line after the failed write", got)
	}
}
