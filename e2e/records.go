//go:build linux

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/slotlock/slotlock/e2e/internal/ledger"
)

// Run is one run of a job as the ledger saw it: the start line of its first
// attempt and the end line of its last. Retry attempts share the run id.
type Run struct {
	Job     string
	Slot    time.Time // nominal slot, UTC; zero when Manual
	Manual  bool
	Replica string
	Token   uint64
	RunID   string
	// Attempts counts start lines; FirstAttempts counts those with
	// SLOTLOCK_ATTEMPT=1 (more than one is a duplicate run).
	Attempts      int
	FirstAttempts int
	Start         time.Time // first start line
	End           time.Time // last end line; zero when the run has none (killed)
	Outcome       string    // ok | failed | canceled | "" (no end line)
	// Inconsistent notes attempts of one run id that disagree on replica,
	// slot or token.
	Inconsistent string
}

// ReadLedger reads a ledger file written by ledgerjob. A missing file is an
// empty ledger (no job ever ran).
func ReadLedger(path string) ([]Run, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseLedger(f)
}

// ParseLedger groups ledger lines into runs keyed by run id, in order of
// first start.
func ParseLedger(r io.Reader) ([]Run, error) {
	byID := map[string]*Run{}
	var order []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var l ledger.Line
		if err := json.Unmarshal(b, &l); err != nil {
			return nil, fmt.Errorf("ledger line %d: %w: %q", n, err, b)
		}
		tok, err := strconv.ParseUint(l.Token, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("ledger line %d: fencing token %q: %w", n, l.Token, err)
		}
		var slot time.Time
		manual := l.Slot == "manual"
		if !manual {
			if slot, err = time.Parse(time.RFC3339, l.Slot); err != nil {
				return nil, fmt.Errorf("ledger line %d: slot %q: %w", n, l.Slot, err)
			}
			slot = slot.UTC()
		}
		at := time.Unix(0, l.UnixNs)
		key := l.Job + "\x00" + l.RunID
		run := byID[key]
		if run == nil {
			run = &Run{Job: l.Job, Slot: slot, Manual: manual, Replica: l.Replica, Token: tok, RunID: l.RunID}
			byID[key] = run
			order = append(order, key)
		} else if run.Replica != l.Replica || !run.Slot.Equal(slot) || run.Token != tok {
			run.Inconsistent = fmt.Sprintf("run %s: replica/slot/token %s/%s/%d then %s/%s/%d",
				l.RunID, run.Replica, run.Slot.Format(time.RFC3339), run.Token, l.Replica, l.Slot, tok)
		}
		switch l.Ev {
		case "start":
			run.Attempts++
			if l.Attempt == "1" {
				run.FirstAttempts++
			}
			if run.Start.IsZero() || at.Before(run.Start) {
				run.Start = at
			}
		case "end":
			if at.After(run.End) {
				run.End, run.Outcome = at, l.Outcome
			}
		default:
			return nil, fmt.Errorf("ledger line %d: unknown ev %q", n, l.Ev)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	out := make([]Run, 0, len(order))
	for _, k := range order {
		out = append(out, *byID[k])
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out, nil
}

// Event is one audit log line of a replica (slog JSON). Fields the line
// does not carry are zero.
type Event struct {
	Time    time.Time
	Level   string
	Msg     string
	Replica string
	Event   string
	Job     string
	Slot    string // RFC 3339 UTC, "manual" or ""
	// FirstSlot and Missed: a line that accounts for several slots of its
	// job (a slot.skipped late with missed > 1) names the first of them
	// and their number, the last being Slot.
	FirstSlot string
	Missed    int
	RunID     string
	Token     uint64
	Reason    string
	Holder    string
	Error     string
	// ErrorClass is run.failed's error_class (stale_token, panic, ...).
	ErrorClass string
	// Node is the address a locking line names (node unreachable, back).
	Node string
}

// ReadEvents reads the JSON log lines of every file; lines that are not
// JSON objects (a panic trace, say) are returned as Junk.
func ReadEvents(paths ...string) (events []Event, junk []string, err error) {
	for _, p := range paths {
		f, err := os.Open(p)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		ev, j, err := ParseEvents(f)
		f.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", p, err)
		}
		events = append(events, ev...)
		for _, l := range j {
			junk = append(junk, p+": "+l)
		}
	}
	sort.SliceStable(events, func(i, j int) bool { return events[i].Time.Before(events[j].Time) })
	return events, junk, nil
}

// ParseEvents parses slog JSON lines.
func ParseEvents(r io.Reader) (events []Event, junk []string, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var m map[string]any
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		if b[0] != '{' || d.Decode(&m) != nil {
			junk = append(junk, string(b))
			continue
		}
		e := Event{
			Level:   str(m["level"]),
			Msg:     str(m["msg"]),
			Replica: str(m["replica"]),
			Event:   str(m["event"]),
			Job:     str(m["job"]),
			Slot:    str(m["slot"]),
			RunID:   str(m["run_id"]),

			FirstSlot: str(m["first_slot"]),
			Reason:    str(m["reason"]),
			Holder:    str(m["holder"]),
			Error:     str(m["error"]),

			ErrorClass: str(m["error_class"]),
			Node:       str(m["node"]),
		}
		if t, err := time.Parse(time.RFC3339Nano, str(m["time"])); err == nil {
			e.Time = t
		}
		e.Missed, _ = strconv.Atoi(str(m["missed"]))
		if v := str(m["fencing_token"]); v != "" {
			e.Token, _ = strconv.ParseUint(v, 10, 64)
		}
		events = append(events, e)
	}
	return events, junk, sc.Err()
}

func str(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case json.Number:
		return v.String()
	default:
		return fmt.Sprint(v)
	}
}
