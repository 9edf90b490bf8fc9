package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The iCalendar subset a calendar file may use (RFC 5545 as holiday
// calendars write it): VEVENTs with DTSTART/DTEND or DURATION, yearly
// RRULEs, EXDATE, STATUS:CANCELLED. Anything else that bears on an event's
// dates is an error naming the file and line.

// icsRepeatUntil is the last year an open-ended yearly rule is expanded
// to.
const icsRepeatUntil = 2199

// maxEventDays bounds one event's span.
const maxEventDays = 366

// maxCalendarDates bounds the dates one file expands to (yearly rules
// repeat through icsRepeatUntil), and so the memory a calendar takes.
const maxCalendarDates = 100_000

// icsLine is one unfolded content line and the file line it starts on.
type icsLine struct {
	n      int
	name   string
	params map[string]string
	value  string
}

// icsEvent is a VEVENT's properties that bear on its dates.
type icsEvent struct {
	line               int
	start, end         *icsTime
	startLine, endLine int
	duration           int // days; 0 none
	durationLine       int
	rrule              string
	rruleLine          int
	exdates            map[time.Time]bool
	cancelled          bool
	invalid            bool // a property did not parse (reported): no further verdict on the event
}

// icsTime is a DTSTART or DTEND: a date, or a date-time read as written
// (its zone is not applied: the event excludes the dates it names).
type icsTime struct {
	date     time.Time // the date, UTC midnight
	hasTime  bool
	midnight bool // a date-time at 00:00:00
}

// parseICS reads the dates of an iCalendar file's events.
func parseICS(path string, b []byte) ([]time.Time, []error) {
	var errs []error
	var ev *icsEvent
	bad := func(line int, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s:%d: %s", path, line, fmt.Sprintf(format, args...)))
		if ev != nil {
			ev.invalid = true
		}
	}
	lines := unfoldICS(string(b))
	if len(lines) == 0 || !strings.EqualFold(lines[0].value, "VCALENDAR") || lines[0].name != "BEGIN" {
		n := 1
		if len(lines) > 0 {
			n = lines[0].n
		}
		return nil, []error{fmt.Errorf("%s:%d: not an iCalendar file: want BEGIN:VCALENDAR first", path, n)}
	}
	var dates []time.Time
	var stack []string
	for _, ln := range lines {
		switch ln.name {
		case "BEGIN":
			comp := strings.ToUpper(ln.value)
			if comp == "VEVENT" && len(stack) == 1 {
				ev = &icsEvent{line: ln.n}
			}
			stack = append(stack, comp)
			continue
		case "END":
			comp := strings.ToUpper(ln.value)
			if len(stack) == 0 || stack[len(stack)-1] != comp {
				bad(ln.n, "END:%s does not close the open component", short(comp))
				return dates, errs
			}
			stack = stack[:len(stack)-1]
			if comp == "VEVENT" && ev != nil && len(stack) == 1 {
				got, evErrs := ev.dates(path)
				dates = append(dates, got...)
				errs = append(errs, evErrs...)
				ev = nil
				if len(dates) > maxCalendarDates {
					bad(ln.n, "more than %d dates; split the calendar or bound its yearly rules (COUNT, UNTIL)", maxCalendarDates)
					return nil, errs
				}
			}
			continue
		}
		if ev == nil || len(stack) != 2 {
			continue // outside an event, or in a component inside one (VALARM)
		}
		ev.take(ln, bad)
	}
	if len(stack) > 0 {
		open := short(stack[len(stack)-1])
		bad(lines[len(lines)-1].n, "BEGIN:%s is never closed (END:%s)", open, open)
	}
	return dates, errs
}

// take reads one property of the event at ln; bad reports a malformed
// one (and marks the event invalid).
func (ev *icsEvent) take(ln icsLine, bad func(line int, format string, args ...any)) {
	switch ln.name {
	case "DTSTART", "DTEND":
		t, err := parseICSTime(ln)
		if err != nil {
			bad(ln.n, "%s %s: %v", ln.name, echo(ln.value), err)
			return
		}
		if ln.name == "DTSTART" {
			ev.start, ev.startLine = t, ln.n
		} else {
			ev.end, ev.endLine = t, ln.n
		}
	case "DURATION":
		d, err := parseICSDuration(ln.value)
		if err != nil {
			bad(ln.n, "DURATION %s: %v", echo(ln.value), err)
			return
		}
		ev.duration, ev.durationLine = d, ln.n
	case "RRULE":
		ev.rrule, ev.rruleLine = ln.value, ln.n
	case "EXDATE":
		for _, v := range strings.Split(ln.value, ",") {
			t, err := parseICSTime(icsLine{params: ln.params, value: v})
			if err != nil {
				bad(ln.n, "EXDATE %s: %v", echo(v), err)
				continue
			}
			if ev.exdates == nil {
				ev.exdates = map[time.Time]bool{}
			}
			ev.exdates[t.date] = true
		}
	case "RDATE", "EXRULE":
		bad(ln.n, "%s is not supported; list each date as an event of its own", ln.name)
	case "STATUS":
		ev.cancelled = strings.EqualFold(ln.value, "CANCELLED")
	}
}

// unfoldICS splits the text into content lines, joining folded ones (a
// line starting with a space or tab continues the previous one).
func unfoldICS(text string) []icsLine {
	text = strings.TrimPrefix(text, "\ufeff")
	var out []icsLine
	var raw []string
	var starts []int
	for i, l := range strings.Split(text, "\n") {
		l = strings.TrimSuffix(l, "\r")
		if (strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t")) && len(raw) > 0 {
			raw[len(raw)-1] += l[1:]
			continue
		}
		if strings.TrimSpace(l) == "" {
			continue
		}
		raw = append(raw, l)
		starts = append(starts, i+1)
	}
	for i, l := range raw {
		out = append(out, splitICSLine(starts[i], l))
	}
	return out
}

// splitICSLine splits NAME;P=V;...:VALUE (a colon or semicolon inside a
// quoted parameter value does not count).
func splitICSLine(n int, l string) icsLine {
	ln := icsLine{n: n, params: map[string]string{}}
	quoted := false
	var parts []string
	last := 0
	for i := 0; i < len(l); i++ {
		switch c := l[i]; {
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == ';':
			parts = append(parts, l[last:i])
			last = i + 1
		case c == ':':
			parts = append(parts, l[last:i])
			ln.value = l[i+1:]
			last = -1
		}
		if last < 0 {
			break
		}
	}
	if last >= 0 {
		parts = append(parts, l[last:])
	}
	ln.name = strings.ToUpper(parts[0])
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(p, "=")
		ln.params[strings.ToUpper(k)] = strings.Trim(v, `"`)
	}
	return ln
}

// parseICSTime reads a DATE (20261225) or DATE-TIME (20261225T090000,
// with Z or a TZID: the date as written is taken).
func parseICSTime(ln icsLine) (*icsTime, error) {
	v := strings.TrimSpace(ln.value)
	isDate := strings.EqualFold(ln.params["VALUE"], "DATE")
	if isDate || len(v) == 8 {
		d, err := time.Parse("20060102", v)
		if err != nil || len(v) != 8 {
			return nil, errors.New("want a date as YYYYMMDD")
		}
		return &icsTime{date: d}, nil
	}
	t, err := time.Parse("20060102T150405", strings.TrimSuffix(v, "Z"))
	if err != nil {
		return nil, errors.New("want a date (YYYYMMDD) or a date-time (YYYYMMDDTHHMMSS, optionally Z)")
	}
	y, m, d := t.Date()
	return &icsTime{date: time.Date(y, m, d, 0, 0, 0, 0, time.UTC), hasTime: true,
		midnight: t.Hour() == 0 && t.Minute() == 0 && t.Second() == 0}, nil
}

// parseICSDuration reads a whole number of days or weeks: P3D, P1W.
func parseICSDuration(v string) (int, error) {
	v = strings.TrimPrefix(strings.TrimSpace(v), "+")
	body, ok := strings.CutPrefix(v, "P")
	if ok && len(body) > 1 {
		unit := body[len(body)-1]
		n, err := strconv.Atoi(body[:len(body)-1])
		if err == nil && n > 0 {
			switch unit {
			case 'D':
				return n, nil
			case 'W':
				return 7 * n, nil
			}
		}
	}
	return 0, errors.New("only whole days or weeks are supported (P1D, P2W)")
}

// dates expands the event: its days, repeated yearly under its RRULE.
func (ev *icsEvent) dates(path string) ([]time.Time, []error) {
	bad := func(line int, format string, args ...any) []error {
		return []error{fmt.Errorf("%s:%d: %s", path, line, fmt.Sprintf(format, args...))}
	}
	if ev.invalid {
		return nil, nil
	}
	if ev.start == nil {
		return nil, bad(ev.line, "VEVENT without a DTSTART")
	}
	if ev.cancelled {
		return nil, nil
	}
	span := 1
	switch {
	case ev.end != nil && ev.duration > 0:
		return nil, bad(ev.durationLine, "DTEND and DURATION together")
	case ev.end != nil:
		if ev.end.hasTime != ev.start.hasTime {
			return nil, bad(ev.endLine, "DTEND must be a date when DTSTART is (and a date-time when it is)")
		}
		diff := int(ev.end.date.Sub(ev.start.date).Hours()/24 + 0.5)
		if diff < 0 {
			return nil, bad(ev.endLine, "DTEND before DTSTART")
		}
		span = max(diff, 1) // an all-day event's DTEND is the day after its last
		if ev.start.hasTime && !(ev.end.midnight && diff > 0) {
			span = diff + 1 // a timed event covers its end's date, unless it ends at that date's midnight
		}
	case ev.duration > 0:
		span = ev.duration
		if ev.start.hasTime && !ev.start.midnight {
			span++
		}
	}
	if span > maxEventDays {
		return nil, bad(ev.startLine, "the event spans %d days, at most %d", span, maxEventDays)
	}
	starts := []time.Time{ev.start.date}
	if ev.rrule != "" {
		var err error
		if starts, err = yearly(ev.rrule, ev.start.date); err != nil {
			return nil, bad(ev.rruleLine, "RRULE %s: %v", echo(ev.rrule), err)
		}
	}
	var out []time.Time
	for _, s := range starts {
		if ev.exdates[s] {
			continue
		}
		for k := range span {
			out = append(out, s.AddDate(0, 0, k))
		}
	}
	return out, nil
}

// yearly expands an RRULE that repeats on the start's month and day:
// FREQ=YEARLY with INTERVAL, COUNT or UNTIL, and BYMONTH / BYMONTHDAY only
// as the start's own. Anything else (BYDAY: "the fourth Thursday") is
// refused: those dates are to be listed.
func yearly(rule string, start time.Time) ([]time.Time, error) {
	interval, count, until := 1, 0, icsRepeatUntil
	freq := false
	for _, part := range strings.Split(rule, ";") {
		k, v, _ := strings.Cut(part, "=")
		k = strings.ToUpper(k)
		switch k {
		case "FREQ":
			if !strings.EqualFold(v, "YEARLY") {
				return nil, errors.New("only FREQ=YEARLY is supported; list the other dates")
			}
			freq = true
		case "INTERVAL":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return nil, errors.New("INTERVAL must be a positive number")
			}
			interval = n
		case "COUNT":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return nil, errors.New("COUNT must be a positive number")
			}
			count = n
		case "UNTIL":
			t, err := parseICSTime(icsLine{value: v})
			if err != nil {
				return nil, fmt.Errorf("UNTIL: %v", err)
			}
			until = min(until, t.date.Year())
			if t.date.Before(time.Date(t.date.Year(), start.Month(), start.Day(), 0, 0, 0, 0, time.UTC)) {
				until-- // that year's occurrence comes after UNTIL
			}
		case "BYMONTH":
			if v != strconv.Itoa(int(start.Month())) {
				return nil, errors.New("BYMONTH other than DTSTART's month is not supported; list the dates")
			}
		case "BYMONTHDAY":
			if v != strconv.Itoa(start.Day()) {
				return nil, errors.New("BYMONTHDAY other than DTSTART's day is not supported; list the dates")
			}
		case "WKST":
		default:
			return nil, fmt.Errorf("%s is not supported (only FREQ=YEARLY on DTSTART's date, with INTERVAL, COUNT or UNTIL); list the dates", short(k))
		}
	}
	if !freq {
		return nil, errors.New("FREQ is required")
	}
	var out []time.Time
	for y := start.Year(); y <= until && (count == 0 || len(out) < count); y += interval {
		d := time.Date(y, start.Month(), start.Day(), 0, 0, 0, 0, time.UTC)
		if d.Day() != start.Day() {
			continue // 29 February in a common year: no occurrence (RFC 5545)
		}
		out = append(out, d)
	}
	return out, nil
}
