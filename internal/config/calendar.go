package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/slotlock/slotlock/scheduler"
)

// Calendar is one entry of the top-level calendars list: dates on which
// the jobs that name it have no slots (docs/configuration.md, Calendars).
type Calendar struct {
	Name    string          `yaml:"name" redact:"show"`
	Exclude CalendarExclude `yaml:"exclude"`

	// Resolved is the calendar as the scheduler takes it: the listed
	// dates, the file's, and the weekends when asked. Load fills it for
	// every valid calendar.
	Resolved *scheduler.Calendar `yaml:"-"`
}

// CalendarExclude says which dates a calendar excludes; at least one of
// its keys must exclude something.
type CalendarExclude struct {
	Dates []string `yaml:"dates" redact:"show"` // YYYY-MM-DD
	// File is a YAML list of YYYY-MM-DD dates (.yaml, .yml) or an
	// iCalendar file (.ics); a relative path is read from the
	// configuration file's directory.
	File         string `yaml:"file" redact:"show"`
	WeekdaysOnly bool   `yaml:"weekdays_only" redact:"show"` // exclude Saturdays and Sundays
}

// Calendar returns the calendar named name.
func (c *Config) Calendar(name string) (*Calendar, bool) {
	for i := range c.Calendars {
		if c.Calendars[i].Name == name {
			return &c.Calendars[i], true
		}
	}
	return nil, false
}

// maxCalendarFile bounds a calendar file's size: a country's holidays for
// decades are a few kilobytes.
const maxCalendarFile = 1 << 20

// maxFileErrors is how many problems of one calendar file are listed.
const maxFileErrors = 10

// validateCalendars checks the calendars and resolves their dates.
func (l *loader) validateCalendars(c *Config) {
	seen := map[string]int{}
	for i := range c.Calendars {
		cal := &c.Calendars[i]
		base := "calendars[" + strconv.Itoa(i) + "]"
		ok := true
		bad := func(field, value string, err error) {
			ok = false
			p := base + "." + field
			if value != "" {
				l.addValue(p, value, err)
			} else {
				l.add(p, err)
			}
		}
		if err := scheduler.CheckName(cal.Name); err != nil {
			bad("name", cal.Name, err)
		} else if first, dup := seen[cal.Name]; dup {
			bad("name", cal.Name, fmt.Errorf("duplicate: calendars[%d] has the same name", first))
		} else {
			seen[cal.Name] = i
		}
		var dates []time.Time
		for k, s := range cal.Exclude.Dates {
			d, err := parseDate(s)
			if err != nil {
				bad("exclude.dates["+strconv.Itoa(k)+"]", s, err)
				continue
			}
			dates = append(dates, d)
		}
		if f := cal.Exclude.File; f != "" {
			fromFile, errs := readCalendarFile(l.calendarPath(f))
			for _, err := range errs {
				bad("exclude.file", "", err)
			}
			dates = append(dates, fromFile...)
		} else if len(cal.Exclude.Dates) == 0 && !cal.Exclude.WeekdaysOnly {
			bad("exclude", "", errors.New("excludes nothing: give dates, a file or weekdays_only: true"))
		}
		if ok {
			cal.Resolved = scheduler.NewCalendar(cal.Name, cal.Exclude.WeekdaysOnly, dates)
		}
	}
}

// calendarPath resolves a calendar file's path: relative to the
// configuration file's directory, so that the two can be moved together.
func (l *loader) calendarPath(f string) string {
	if filepath.IsAbs(f) || l.path == "" {
		return f
	}
	return filepath.Join(filepath.Dir(l.path), f)
}

// validateJobCalendar checks that a job's calendar is defined and wraps
// its schedule with it.
func (l *loader) validateJobCalendar(c *Config, j *Job, add func(field, value string, err error)) {
	if j.Calendar == "" {
		return
	}
	cal, ok := c.Calendar(j.Calendar)
	if !ok {
		var names []string
		for _, k := range c.Calendars {
			if k.Resolved != nil {
				names = append(names, k.Name)
			}
		}
		if len(names) == 0 {
			add("calendar", j.Calendar, errors.New("not defined: no valid entry in calendars"))
		} else {
			add("calendar", j.Calendar, fmt.Errorf("not defined; calendars: %s", strings.Join(names, ", ")))
		}
		return
	}
	if cal.Resolved == nil {
		return // the calendar's own errors say why
	}
	j.ResolvedCalendar = cal.Resolved
	if j.Schedule != nil {
		j.Schedule = scheduler.WithCalendar(j.Schedule, cal.Resolved, j.Location)
	}
}

// parseDate reads YYYY-MM-DD, strictly.
func parseDate(s string) (time.Time, error) {
	d, err := time.Parse(time.DateOnly, s)
	if err != nil || d.Format(time.DateOnly) != s {
		return time.Time{}, errors.New("want a date as YYYY-MM-DD")
	}
	return d, nil
}

// readCalendarFile reads a calendar file's dates, by its extension: an
// iCalendar file (.ics) or a YAML list of dates (.yaml, .yml). Each
// problem names the file and line.
func readCalendarFile(path string) ([]time.Time, []error) {
	ext := strings.ToLower(filepath.Ext(path))
	if ext != ".ics" && ext != ".yaml" && ext != ".yml" {
		return nil, []error{fmt.Errorf("%s: want an iCalendar file (.ics) or a YAML list of dates (.yaml, .yml)", path)}
	}
	// A regular file only, bounded: a FIFO would block the load, a device
	// never end.
	b, err := readRegular(path, maxCalendarFile, nil)
	if err != nil {
		return nil, []error{fmt.Errorf("cannot read calendar file: %w", err)}
	}
	var dates []time.Time
	var errs []error
	if ext == ".ics" {
		dates, errs = parseICS(path, b)
	} else {
		dates, errs = parseDateList(path, b)
	}
	if len(errs) > maxFileErrors {
		errs = append(errs[:maxFileErrors], fmt.Errorf("%s: %d more problems", path, len(errs)-maxFileErrors))
	}
	return dates, errs
}

// datesAsText turns the dates YAML read as timestamps (an unquoted
// 2026-12-25) in the calendars' exclude.dates back into their text, so
// that they need no quotes; a timestamp with a time of day keeps it, and
// is refused as not a date.
func datesAsText(calendars any) {
	list, _ := calendars.([]any)
	for _, c := range list {
		m, _ := c.(map[string]any)
		ex, _ := m["exclude"].(map[string]any)
		dates, _ := ex["dates"].([]any)
		for i, d := range dates {
			if t, ok := d.(time.Time); ok {
				if t.Equal(t.Truncate(24*time.Hour)) && t.Location() == time.UTC {
					dates[i] = t.Format(time.DateOnly)
				} else {
					dates[i] = t.Format(time.RFC3339)
				}
			}
		}
	}
}
