package driver

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// The past spans follow the reason, so a reader of the value's older form
// (five fields, the reason last) reads the current pause from a value that
// holds them, and the new reader reads a value of the older form.
func TestPausePastValueIsReadByTheOlderForm(t *testing.T) {
	at := time.UnixMilli(1_800_000_000_000)
	p := Pause{Paused: true, Until: at.Add(time.Hour), By: "ops", Reason: "db|migration\x1e", Version: at.UnixMilli(),
		Past: []PauseSpan{{From: at.Add(-2 * time.Hour), To: at.Add(-time.Hour)}}}
	v := FormatPause(p)

	f := strings.SplitN(v, "|", 5) // the older reader
	version, _ := strconv.ParseInt(f[0], 10, 64)
	until, _ := strconv.ParseInt(f[2], 10, 64)
	if version != p.Version || f[1] != "p" || until != p.Until.UnixMilli() || f[3] != "ops" {
		t.Fatalf("older reader of %q: version %d state %s until %d by %s", v, version, f[1], until, f[3])
	}

	got := ParsePause(v)
	if got.Reason != "db|migration " || len(got.Past) != 1 || !got.Past[0].From.Equal(p.Past[0].From) ||
		!got.Past[0].To.Equal(p.Past[0].To) || !got.Until.Equal(p.Until) {
		t.Fatalf("ParsePause(%q) = %+v", v, got)
	}
	old := ParsePause("1800000000000|r|0|ops|done")
	if old.Paused || old.Reason != "done" || old.Past != nil {
		t.Fatalf("a value of the older form: %+v", old)
	}
}

// Succeed keeps a span for a pause only where it held after it was
// written, and drops spans older than PastPauseKeep.
func TestPauseSucceed(t *testing.T) {
	at := time.UnixMilli(1_800_000_000_000)
	ms := func(d time.Duration) int64 { return at.Add(d).UnixMilli() }
	paused := Pause{Paused: true, Version: ms(0), Until: at.Add(time.Minute)}
	next := paused.Succeed(Pause{Version: ms(2 * time.Minute)})
	if len(next.Past) != 1 || !next.Past[0].To.Equal(at.Add(time.Minute)) {
		t.Fatalf("a pause ended by itself: %+v", next.Past)
	}
	if r := (Pause{Version: ms(0)}).Succeed(Pause{Version: ms(time.Minute)}); r.Past != nil {
		t.Fatalf("a resume over a resume: %+v", r.Past)
	}
	later := next.Succeed(Pause{Version: ms(PastPauseKeep + 2*time.Minute)})
	if later.Past != nil {
		t.Fatalf("a span older than PastPauseKeep is kept: %+v", later.Past)
	}
}
