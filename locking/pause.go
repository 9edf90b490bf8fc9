package locking

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Pause is a family's pause state, kept in the lock stores beside its keys
// (<prefix>:{<family>}:pause) and read by every Claim in the family in the
// same round trip: while a pause is active, Claim fails with a
// *PausedError. Acquire is not affected (a manual run still runs).
type Pause struct {
	Paused bool
	Until  time.Time // when Paused: the end, on the writer's clock; zero means until resumed
	By     string    // who paused or resumed (a replica or a host name)
	Reason string
	// Version orders the writes: SetPause writes above every version it
	// found, so the newest pause or resume wins on every store. It is the
	// write's time in Unix milliseconds (or one more than the previous
	// version): Since.
	Version int64
	// Past are the pauses that ended before this write, oldest first
	// (pause_past.go).
	Past []PauseSpan
}

// ActiveAt reports whether the pause holds at t.
func (p Pause) ActiveAt(t time.Time) bool {
	return p.Paused && (p.Until.IsZero() || t.Before(p.Until))
}

// Since is when the pause (or resume) was written.
func (p Pause) Since() time.Time { return time.UnixMilli(p.Version) }

// Covers reports whether work due at t falls within the pause: written
// before t and not ended by t. A slot missed during a pause and claimed
// after it ended is still covered.
func (p Pause) Covers(t time.Time) bool { return p.ActiveAt(t) && !t.Before(p.Since()) }

// ErrPaused is matched by the error of a Claim refused by a pause.
var ErrPaused = errors.New("locking: paused")

// PausedError is a Claim refused because its family is paused.
type PausedError struct {
	Key   Key
	Pause Pause
	// Refusal, when set, is what else refused the claim in the same
	// round: another lease holds the key (a *HeldError). A pause that
	// began after the work was due (Pause.Covers is false) did not stop
	// that lease's work: the key is held, not paused.
	Refusal error
}

func (e *PausedError) Error() string {
	s := "locking: " + e.Key.String() + " not claimed: paused"
	if !e.Pause.Until.IsZero() {
		s += " until " + e.Pause.Until.UTC().Format(time.RFC3339)
	}
	return s
}

func (e *PausedError) Is(target error) bool { return target == ErrPaused }

// FormatPause is the register's value: "<version>|<p or r>|<until ms>|<by>|<reason>",
// then the past pauses (formatPast).
func FormatPause(p Pause) string {
	state, until := "r", int64(0)
	if p.Paused {
		state = "p"
		if !p.Until.IsZero() {
			until = p.Until.UnixMilli()
		}
	}
	reason := strings.ReplaceAll(p.Reason, pastMark[:1], " ")
	return fmt.Sprintf("%d|%s|%d|%s|%s", p.Version, state, until, p.By, reason) + formatPast(p.Past)
}

// parsePause reads a register's value; "" (never set) is not paused.
func parsePause(v string) Pause {
	if v == "" {
		return Pause{} // the common case, without splitting
	}
	f := strings.SplitN(v, "|", 5)
	if len(f) < 5 {
		return Pause{}
	}
	var p Pause
	p.Version, _ = strconv.ParseInt(f[0], 10, 64)
	p.Paused = f[1] == "p"
	if ms, _ := strconv.ParseInt(f[2], 10, 64); p.Paused && ms > 0 {
		p.Until = time.UnixMilli(ms)
	}
	p.By = f[3]
	p.Reason, p.Past = cutPast(f[4])
	return p
}

// NewestPause is the pause of highest version among values.
func NewestPause(values []string) Pause {
	var best Pause
	for _, v := range values {
		if p := parsePause(v); p.Version > best.Version {
			best = p
		}
	}
	return best
}
