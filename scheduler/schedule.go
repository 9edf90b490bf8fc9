package scheduler

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Schedule computes the slots of a job. Next returns the first slot strictly
// after t: a whole-second instant, or the zero Time when the schedule never
// fires again (within five years). Implementations are pure and safe for
// concurrent use.
type Schedule interface {
	Next(t time.Time) time.Time
}

// ErrBadSchedule is matched (errors.Is) by every error ParseSchedule returns.
var ErrBadSchedule = errors.New("scheduler: invalid schedule")

// ScheduleError describes why a schedule spec was rejected. Its message names
// the field, e.g. `minute 61 out of range [0,59]`, and does not repeat the
// spec, so callers can prefix it with their own context
// (`jobs[2] "report": schedule: ...`).
type ScheduleError struct {
	Spec  string
	Field string // "second", "minute", "hour", "day-of-month", "month", "day-of-week", or "" for the whole spec
	Msg   string
}

func (e *ScheduleError) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + " " + e.Msg
}

func (e *ScheduleError) Is(target error) bool { return target == ErrBadSchedule }

// The engine's parser: robfig/cron/v3 is used for parsing (bit sets) only;
// slot computation is ours (see Next below), because the engine's own Next
// skips spring-forward slots and runs fall-back slots twice.
var engineParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour |
	cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

type fieldBounds struct {
	name     string
	min, max int
	names    map[string]int
	hint     string
}

var (
	secondField = fieldBounds{name: "second", min: 0, max: 59}
	minuteField = fieldBounds{name: "minute", min: 0, max: 59}
	hourField   = fieldBounds{name: "hour", min: 0, max: 23}
	domField    = fieldBounds{name: "day-of-month", min: 1, max: 31}
	monthField  = fieldBounds{name: "month", min: 1, max: 12, names: map[string]int{
		"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
		"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
	}}
	dowField = fieldBounds{name: "day-of-week", min: 0, max: 6, names: map[string]int{
		"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6,
	}, hint: " (0 is Sunday)"}
)

// ParseSchedule parses a cron spec evaluated in loc (nil means UTC):
//
//   - 6 fields "second minute hour day-of-month month day-of-week", or
//     5 fields without the seconds (second 0);
//   - descriptors @yearly (@annually), @monthly, @weekly, @daily (@midnight),
//     @hourly;
//   - "@every <duration>": whole seconds, at least 1s. Its slots are the
//     multiples of the duration since the Unix epoch, so every replica
//     computes the same slots whenever it started; they ignore loc and DST.
//
// Slots and daylight saving time (the guarantee of Next):
//
//   - Wall-clock schedules (the hour field does not cover all 24 hours, e.g.
//     "30 2 * * *", @daily): a slot whose local time falls in a
//     spring-forward gap runs once, at the first instant after the gap (the
//     transition itself; several gap slots collapse into that one slot); a
//     slot whose local time occurs twice in a fall-back fold runs once, at its
//     first occurrence.
//   - Interval-like schedules (the hour field covers every hour, e.g.
//     "*/5 * * * * *", "0 */15 * * * *", @hourly): they fire at every
//     instant whose local clock matches, so they keep their real elapsed
//     spacing through both transitions: local times inside a gap do not
//     exist and are not run, local times in a fold run at both occurrences.
//
// Errors (*ScheduleError, matching ErrBadSchedule) name the field at fault:
// `minute 61 out of range [0,59]`, `expected 5 or 6 fields, found 7`.
func ParseSchedule(spec string, loc *time.Location) (Schedule, error) {
	if loc == nil {
		loc = time.UTC
	}
	s := strings.TrimSpace(spec)
	bad := func(field, format string, args ...any) error {
		return &ScheduleError{Spec: spec, Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if s == "" {
		return nil, bad("", "empty schedule")
	}
	if strings.HasPrefix(s, "TZ=") || strings.HasPrefix(s, "CRON_TZ=") {
		return nil, bad("", "a time zone prefix is not allowed in the schedule; set the job's timezone instead")
	}
	if strings.HasPrefix(s, "@") {
		return parseDescriptor(spec, s, loc)
	}
	fields := strings.Fields(s)
	var bounds []fieldBounds
	switch len(fields) {
	case 5:
		bounds = []fieldBounds{minuteField, hourField, domField, monthField, dowField}
	case 6:
		bounds = []fieldBounds{secondField, minuteField, hourField, domField, monthField, dowField}
	default:
		return nil, bad("", "expected 5 or 6 fields, found %d", len(fields))
	}
	for i, f := range fields {
		if err := checkField(f, bounds[i]); err != nil {
			return nil, bad(bounds[i].name, "%s", err.Error())
		}
	}
	parsed, err := engineParser.Parse(s)
	if err != nil {
		// checkField accepts only what the engine accepts; this is a safety net.
		return nil, bad("", "%v", err)
	}
	ss, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, bad("", "unsupported schedule")
	}
	return newSpecSchedule(spec, ss, loc)
}

func parseDescriptor(spec, s string, loc *time.Location) (Schedule, error) {
	bad := func(format string, args ...any) error {
		return &ScheduleError{Spec: spec, Msg: fmt.Sprintf(format, args...)}
	}
	if rest, ok := strings.CutPrefix(s, "@every"); ok {
		arg := strings.TrimSpace(rest)
		if arg == "" || rest[0] != ' ' && rest[0] != '\t' {
			return nil, bad("@every needs a duration, e.g. \"@every 10s\"")
		}
		d, err := time.ParseDuration(arg)
		if err != nil {
			return nil, bad("@every: invalid duration %q", arg)
		}
		if d < time.Second {
			return nil, bad("@every %s: interval must be at least 1s", arg)
		}
		if d%time.Second != 0 {
			return nil, bad("@every %s: interval must be a whole number of seconds", arg)
		}
		return &everySchedule{spec: spec, every: int64(d / time.Second), loc: loc}, nil
	}
	parsed, err := engineParser.Parse(s)
	if err != nil {
		return nil, bad("unknown descriptor %q (want @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly or @every <duration>)", s)
	}
	ss, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return nil, bad("unsupported schedule")
	}
	return newSpecSchedule(spec, ss, loc)
}

// checkField validates one cron field with the engine's grammar:
// a comma list of "*", "?", N, N-M, each optionally "/step"; N may be a name.
func checkField(f string, b fieldBounds) error {
	for _, expr := range strings.Split(f, ",") {
		if expr == "" {
			return fmt.Errorf("%q: empty list element", f)
		}
		rng, stepText, hasStep := strings.Cut(expr, "/")
		if hasStep {
			if strings.Contains(stepText, "/") {
				return fmt.Errorf("%q: too many slashes", expr)
			}
			step, err := strconv.Atoi(stepText)
			if err != nil {
				return fmt.Errorf("%q: step %q is not a number", expr, stepText)
			}
			if step <= 0 {
				return fmt.Errorf("%q: step must be positive", expr)
			}
		}
		if rng == "*" || rng == "?" {
			continue
		}
		lo, hi, isRange := strings.Cut(rng, "-")
		if isRange && strings.Contains(hi, "-") {
			return fmt.Errorf("%q: too many hyphens", expr)
		}
		start, err := fieldValue(lo, b)
		if err != nil {
			return err
		}
		end := start
		if isRange {
			if end, err = fieldValue(hi, b); err != nil {
				return err
			}
			if start > end {
				return fmt.Errorf("range %s runs backwards", rng)
			}
		}
	}
	return nil
}

func fieldValue(s string, b fieldBounds) (int, error) {
	if v, ok := b.names[strings.ToLower(s)]; ok {
		return v, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		if b.names != nil {
			return 0, fmt.Errorf("%q is neither a number nor a name", s)
		}
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if v < b.min || v > b.max {
		return 0, fmt.Errorf("%d out of range [%d,%d]%s", v, b.min, b.max, b.hint)
	}
	return v, nil
}

// everySchedule fires at the multiples of every seconds since the Unix epoch.
type everySchedule struct {
	spec  string
	every int64
	loc   *time.Location
}

func (s *everySchedule) Next(t time.Time) time.Time {
	u := t.Unix() // floor for t >= 1970; slots are whole seconds
	n := floorDiv(u, s.every) + 1
	return time.Unix(n*s.every, 0).In(s.loc)
}

func (s *everySchedule) String() string { return s.spec }

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// specSchedule evaluates the engine's bit sets on local wall-clock time,
// one time-zone interval (fixed UTC offset) at a time; see ParseSchedule for
// the DST rules it implements.
type specSchedule struct {
	spec     string
	engine   *cron.SpecSchedule // Location = UTC: evaluated on "wall seconds"
	loc      *time.Location
	interval bool // the hour field covers all 24 hours
}

const allHours = (uint64(1) << 24) - 1

func newSpecSchedule(spec string, ss *cron.SpecSchedule, loc *time.Location) (Schedule, error) {
	engine := *ss
	engine.Location = time.UTC
	s := &specSchedule{spec: spec, engine: &engine, loc: loc, interval: engine.Hour&allHours == allHours}
	// A spec such as "0 0 30 2 *" parses but never fires: say so now rather
	// than never running the job.
	// Five years from 1970 include a leap day.
	if s.matchFrom(0).IsZero() {
		return nil, &ScheduleError{Spec: spec, Msg: "never fires (no date matches the day-of-month and month fields)"}
	}
	return s, nil
}

func (s *specSchedule) String() string { return s.spec }

// matchFrom returns the first wall time >= w (wall seconds: the local clock
// reading expressed as seconds since 1970-01-01T00:00:00 of that clock) that
// the fields match, as a UTC time, or the zero Time when none within five years.
func (s *specSchedule) matchFrom(w int64) time.Time {
	return s.engine.Next(time.Unix(w-1, 0).UTC())
}

// zoneAt describes the fixed-offset interval of loc containing instant u
// (Unix seconds): [start, end) and the offset; start/end are ±inf (as
// math.MinInt64/MaxInt64) when unbounded.
func zoneAt(loc *time.Location, u int64) (start, end, offset int64) {
	t := time.Unix(u, 0).In(loc)
	_, off := t.Zone()
	zs, ze := t.ZoneBounds()
	start, end = minInt64, maxInt64
	if !zs.IsZero() {
		start = zs.Unix()
	}
	if !ze.IsZero() {
		end = ze.Unix()
	}
	return start, end, int64(off)
}

const (
	minInt64 = -1 << 63
	maxInt64 = 1<<63 - 1
)

// Next returns the first slot strictly after t (see ParseSchedule for the
// DST rules), in the schedule's location; zero when none within five years.
func (s *specSchedule) Next(t time.Time) time.Time {
	f := t.Unix() + 1 // first whole second strictly after t (Unix floors)
	for range 64 {    // each round enters a later zone interval or leaves a fold
		start, end, off := zoneAt(s.loc, f)
		if start != minInt64 && f == start && !s.interval {
			// Entering an interval: wall-clock slots in the gap just before it
			// (previous offset smaller) run at its first instant.
			_, _, prevOff := zoneAt(s.loc, start-1)
			if prevOff < off {
				w := s.matchFrom(start + prevOff)
				if !w.IsZero() && w.Unix() < start+off {
					return time.Unix(start, 0).In(s.loc)
				}
			}
		}
		w := s.matchFrom(f + off)
		if w.IsZero() {
			return time.Time{}
		}
		i := w.Unix() - off
		if end == maxInt64 || i < end {
			if !s.interval && start != minInt64 {
				// A fold: the previous interval (larger offset) already showed
				// the wall times [start+off, start+prevOff); a wall-clock slot
				// runs at its first occurrence only.
				_, _, prevOff := zoneAt(s.loc, start-1)
				if prevOff > off && w.Unix() < start+prevOff {
					f = max(i+1, start+prevOff-off)
					continue
				}
			}
			return time.Unix(i, 0).In(s.loc)
		}
		f = end
	}
	return time.Time{}
}
