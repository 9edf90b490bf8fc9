package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/slotlock/slotlock/jobs"
)

// TestTextLogMessageCannotForgeLines: the log plugin's message comes from
// the configuration; in text format a newline in it must not start a line
// of its own, nor an escape sequence reach the terminal.
func TestTextLogMessageCannotForgeLines(t *testing.T) {
	factory, ok := jobs.Lookup("log")
	if !ok {
		t.Fatal("log plugin not registered")
	}
	for _, msg := range []string{
		"ok\n12:00:00 ERR forged line event=run.failed",
		"\x1b[2J\x1b[31mred alert\x1b[0m",
		"carriage\rreturn", "tab\there", "bell\a", "nul\x00", "bad utf8 \xff", "c1 \u009b31m",
	} {
		var buf bytes.Buffer
		log, err := newLogger(&buf, "text", "info", "r1")
		if err != nil {
			t.Fatal(err)
		}
		job, err := factory(map[string]any{"message": msg})
		if err != nil {
			t.Fatal(err)
		}
		if err := job.Run(context.Background(), jobs.Run{Job: "demo", Logger: log}); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
			t.Errorf("message %q: not exactly one line:\n%s", msg, out)
		}
		if strings.ContainsAny(strings.TrimSuffix(out, "\n"), "\x1b\r\a\x00\t\u009b") {
			t.Errorf("message %q: a control character reached the output: %q", msg, out)
		}
	}
	// A plain message is written as it is.
	var buf bytes.Buffer
	log, _ := newLogger(&buf, "text", "info", "r1")
	log.Info(`all "good" here: 100% = done`)
	if !strings.Contains(buf.String(), ` all "good" here: 100% = done `) {
		t.Errorf("plain message changed: %q", buf.String())
	}
}

// TestJSONLogCompact: a JSON line's time is UTC with microseconds, fixed
// width; its other fields are slog's JSON handler's, the message always
// included (the contract names that handler).
func TestJSONLogCompact(t *testing.T) {
	var buf bytes.Buffer
	log, err := newLogger(&buf, "json", "info", "r1")
	if err != nil {
		t.Fatal(err)
	}
	log.Info("run.started", "event", "run.started", "job", "a")
	log.Info("x", "event", "job.log")
	log.With("event", "job.log").Info("job.log")
	log.Info("no event")
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("want 4 lines:\n%s", buf.String())
	}
	for i, want := range []string{
		`"level":"INFO","msg":"run.started","replica":"r1","event":"run.started","job":"a"}`,
		`"level":"INFO","msg":"x","replica":"r1","event":"job.log"}`,
		`"level":"INFO","msg":"job.log","replica":"r1","event":"job.log"}`,
		`"level":"INFO","msg":"no event","replica":"r1"}`,
	} {
		line := lines[i]
		var v struct{ Time string }
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("line %d: %v: %s", i, err, line)
		}
		if _, err := time.Parse(time.RFC3339Nano, v.Time); err != nil || len(v.Time) != len(jsonTimeLayout) || !strings.HasSuffix(v.Time, "Z") {
			t.Errorf("line %d: time %q: want RFC 3339 UTC with microseconds", i, v.Time)
		}
		if !strings.HasSuffix(line, want) {
			t.Errorf("line %d:\n got %s\nwant …%s", i, line, want)
		}
	}
}
