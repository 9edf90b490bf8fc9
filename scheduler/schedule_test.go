package scheduler

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func mustLoc(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return loc
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestNextTransitions checks Next on both DST transition days of 2026 in
// three zones, with the expected slots written as UTC instants (local time in
// the comment).
func TestNextTransitions(t *testing.T) {
	cases := []struct {
		zone, spec, from string
		want             []string // successive Next results
	}{
		// America/New_York: 2026-03-08 02:00 EST -> 03:00 EDT (07:00Z);
		// 2026-11-01 02:00 EDT -> 01:00 EST (06:00Z).
		{"America/New_York", "30 2 * * *", "2026-03-07T17:00:00Z", []string{
			"2026-03-08T07:00:00Z", // 02:30 does not exist: runs at 03:00 EDT, once
			"2026-03-09T06:30:00Z", // 02:30 EDT
		}},
		{"America/New_York", "0 0 2 * * *", "2026-03-08T06:59:59Z", []string{"2026-03-08T07:00:00Z", "2026-03-09T06:00:00Z"}},
		{"America/New_York", "0 0 2 * * *", "2026-03-08T06:59:59.5Z", []string{"2026-03-08T07:00:00Z"}},
		{"America/New_York", "0 0 2,3 * * *", "2026-03-08T06:00:00Z", []string{
			"2026-03-08T07:00:00Z", // 02:00 (gap) and 03:00 are the same instant: one slot
			"2026-03-09T06:00:00Z",
		}},
		{"America/New_York", "0 */15 2 * * *", "2026-03-08T06:00:00Z", []string{
			"2026-03-08T07:00:00Z", // 02:00, 02:15, 02:30, 02:45 collapse into 03:00 EDT
			"2026-03-09T06:00:00Z",
		}},
		{"America/New_York", "0 30 2,3 * * *", "2026-03-08T06:00:00Z", []string{"2026-03-08T07:00:00Z", "2026-03-08T07:30:00Z"}},
		{"America/New_York", "30 1 * * *", "2026-10-31T16:00:00Z", []string{
			"2026-11-01T05:30:00Z", // 01:30 EDT, first occurrence
			"2026-11-02T06:30:00Z", // 01:30 EST next day; 01:30 EST on Nov 1 is skipped
		}},
		{"America/New_York", "30 1 * * *", "2026-11-01T06:10:00Z", []string{"2026-11-02T06:30:00Z"}}, // from inside the repeated hour
		{"America/New_York", "0 */20 1 * * *", "2026-11-01T05:00:00Z", []string{
			"2026-11-01T05:20:00Z", "2026-11-01T05:40:00Z", "2026-11-02T06:00:00Z",
		}},
		{"America/New_York", "0 0 2 * * *", "2026-11-01T05:30:00Z", []string{"2026-11-01T07:00:00Z"}}, // 02:00 EST
		// interval-like: real elapsed time through both transitions
		{"America/New_York", "0 */15 * * * *", "2026-03-08T06:40:00Z", []string{
			"2026-03-08T06:45:00Z", "2026-03-08T07:00:00Z", "2026-03-08T07:15:00Z",
		}},
		{"America/New_York", "0 */15 * * * *", "2026-11-01T05:40:00Z", []string{
			"2026-11-01T05:45:00Z", // 01:45 EDT
			"2026-11-01T06:00:00Z", // 01:00 EST
			"2026-11-01T06:15:00Z", // 01:15 EST
		}},
		{"America/New_York", "@hourly", "2026-11-01T04:30:00Z", []string{
			"2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z",
		}},
		{"America/New_York", "*/5 * * * * *", "2026-11-01T05:59:52Z", []string{
			"2026-11-01T05:59:55Z", "2026-11-01T06:00:00Z", "2026-11-01T06:00:05Z",
		}},
		{"America/New_York", "*/5 * * * * *", "2026-03-08T06:59:52Z", []string{
			"2026-03-08T06:59:55Z", "2026-03-08T07:00:00Z", "2026-03-08T07:00:05Z",
		}},
		{"America/New_York", "@daily", "2026-03-07T12:00:00Z", []string{"2026-03-08T05:00:00Z", "2026-03-09T04:00:00Z"}},

		// Europe/Berlin: 2026-03-29 02:00 CET -> 03:00 CEST (01:00Z);
		// 2026-10-25 03:00 CEST -> 02:00 CET (01:00Z).
		{"Europe/Berlin", "30 2 * * *", "2026-03-28T12:00:00Z", []string{
			"2026-03-29T01:00:00Z", "2026-03-30T00:30:00Z",
		}},
		{"Europe/Berlin", "30 2 * * *", "2026-10-24T12:00:00Z", []string{
			"2026-10-25T00:30:00Z", // 02:30 CEST
			"2026-10-26T01:30:00Z", // next day 02:30 CET
		}},
		{"Europe/Berlin", "0 */30 * * * *", "2026-10-25T00:15:00Z", []string{
			"2026-10-25T00:30:00Z", "2026-10-25T01:00:00Z", "2026-10-25T01:30:00Z", "2026-10-25T02:00:00Z",
		}},
		{"Europe/Berlin", "0 0 * * * *", "2026-03-29T00:30:00Z", []string{"2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z"}},
		{"Europe/Berlin", "0 0 9 * * MON-FRI", "2026-03-27T09:00:00Z", []string{"2026-03-30T07:00:00Z"}},

		// Australia/Lord_Howe (+10:30 standard, +11 summer, a 30-minute shift):
		// 2026-04-05 02:00 +11 -> 01:30 +10:30 (2026-04-04T15:00Z);
		// 2026-10-04 02:00 +10:30 -> 02:30 +11 (2026-10-03T15:30Z).
		{"Australia/Lord_Howe", "0 15 2 * * *", "2026-10-03T12:00:00Z", []string{
			"2026-10-03T15:30:00Z", // 02:15 does not exist: runs at 02:30 +11
			"2026-10-04T15:15:00Z",
		}},
		{"Australia/Lord_Howe", "0 45 2 * * *", "2026-10-03T12:00:00Z", []string{"2026-10-03T15:45:00Z"}},
		{"Australia/Lord_Howe", "0 45 1 * * *", "2026-04-04T12:00:00Z", []string{
			"2026-04-04T14:45:00Z", // 01:45 +11, first occurrence
			"2026-04-05T15:15:00Z", // next day 01:45 +10:30
		}},
		{"Australia/Lord_Howe", "0 */15 * * * *", "2026-04-04T14:40:00Z", []string{
			"2026-04-04T14:45:00Z", // 01:45 +11
			"2026-04-04T15:00:00Z", // 01:30 +10:30
			"2026-04-04T15:15:00Z", // 01:45 +10:30
			"2026-04-04T15:30:00Z", // 02:00 +10:30
		}},
		{"Australia/Lord_Howe", "0 */15 * * * *", "2026-10-03T15:10:00Z", []string{
			"2026-10-03T15:15:00Z", // 01:45 +10:30
			"2026-10-03T15:30:00Z", // 02:30 +11
		}},

		// ordinary cases
		{"UTC", "*/5 * * * * *", "2026-11-29T10:00:03.5Z", []string{"2026-11-29T10:00:05Z", "2026-11-29T10:00:10Z"}},
		{"UTC", "*/5 * * * * *", "2026-11-29T10:00:05Z", []string{"2026-11-29T10:00:10Z"}},
		{"UTC", "0 0 29 2 *", "2026-03-01T00:00:00Z", []string{"2028-02-29T00:00:00Z"}},
		{"UTC", "0 12 * JAN,jul SUN", "2026-06-01T00:00:00Z", []string{"2026-07-05T12:00:00Z", "2026-07-12T12:00:00Z"}},
		{"UTC", "0 0 1,15 * 3", "2026-07-01T00:00:00Z", []string{"2026-07-08T00:00:00Z", "2026-07-15T00:00:00Z"}}, // dom OR dow
		{"UTC", "@every 10s", "2026-11-29T10:00:07Z", []string{"2026-11-29T10:00:10Z", "2026-11-29T10:00:20Z"}},
		{"UTC", "@every 90s", "1970-01-01T00:00:00Z", []string{"1970-01-01T00:01:30Z", "1970-01-01T00:03:00Z"}},
		{"America/New_York", "@every 1h", "2026-11-01T05:30:00Z", []string{"2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z"}},
		{"Asia/Kolkata", "@every 1h", "2026-01-01T00:10:00Z", []string{"2026-01-01T01:00:00Z"}}, // epoch-aligned, not local
		{"Asia/Kolkata", "0 9 * * *", "2026-01-01T00:00:00Z", []string{"2026-01-01T03:30:00Z"}},
	}
	for _, c := range cases {
		t.Run(c.zone+"/"+c.spec+"/"+c.from, func(t *testing.T) {
			loc := mustLoc(t, c.zone)
			s, err := ParseSchedule(c.spec, loc)
			if err != nil {
				t.Fatal(err)
			}
			at := utc(c.from)
			for i, w := range c.want {
				got := s.Next(at)
				if !got.Equal(utc(w)) {
					t.Fatalf("Next #%d after %s = %s (%s), want %s (%s)", i+1, at.UTC().Format(time.RFC3339),
						got.UTC().Format(time.RFC3339), got.Format(time.RFC3339),
						w, utc(w).In(loc).Format(time.RFC3339))
				}
				if got.Location() != loc {
					t.Errorf("Next returned location %v, want %v", got.Location(), loc)
				}
				at = got
			}
		})
	}
}

// TestNextWallClockOncePerDay checks, over every day of a year in zones with
// 1-hour and 30-minute shifts, that a daily wall-clock schedule runs exactly
// once per local date whatever its time of day, never earlier than its local
// time, and strictly increasing.
func TestNextWallClockOncePerDay(t *testing.T) {
	zones := []string{"America/New_York", "Europe/Berlin", "Australia/Lord_Howe"}
	times := []string{"0 0", "30 0", "0 1", "15 1", "30 1", "45 1", "0 2", "15 2", "30 2", "45 2", "0 3", "30 3", "0 12", "59 23"}
	if testing.Short() {
		times = times[2:10]
	}
	for _, zone := range zones {
		loc := mustLoc(t, zone)
		for _, hm := range times {
			spec := hm + " * * *"
			s, err := ParseSchedule(spec, loc)
			if err != nil {
				t.Fatal(err)
			}
			var mm, hh int
			fmt.Sscanf(hm, "%d %d", &mm, &hh)
			from := time.Date(2026, 1, 1, 0, 0, 0, 0, loc).Add(-time.Second)
			end := time.Date(2027, 1, 1, 0, 0, 0, 0, loc)
			perDay := map[string]int{}
			prev := from
			for at := s.Next(from); at.Before(end); at = s.Next(at) {
				if !at.After(prev) || at.Nanosecond() != 0 {
					t.Fatalf("%s %q: Next(%s) = %s not strictly later or not whole", zone, spec, prev, at)
				}
				lt := at.In(loc)
				if lt.Hour()*60+lt.Minute() < hh*60+mm {
					t.Errorf("%s %q: ran at %s, before its local time", zone, spec, lt)
				}
				perDay[lt.Format(time.DateOnly)]++
				prev = at
			}
			if len(perDay) != 365 {
				t.Errorf("%s %q: ran on %d dates in 2026, want 365", zone, spec, len(perDay))
			}
			for d, n := range perDay {
				if n != 1 {
					t.Errorf("%s %q: ran %d times on %s", zone, spec, n, d)
				}
			}
		}
	}
}

// TestNextIntervalElapsed checks that interval-like schedules keep their real
// spacing across the transition days of the three zones.
func TestNextIntervalElapsed(t *testing.T) {
	days := map[string][]string{
		"America/New_York":    {"2026-03-08", "2026-11-01"},
		"Europe/Berlin":       {"2026-03-29", "2026-10-25"},
		"Australia/Lord_Howe": {"2026-04-05", "2026-10-04"},
	}
	specs := map[string]time.Duration{
		"*/5 * * * * *":     5 * time.Second,
		"0 */5 * * * *":     5 * time.Minute,
		"0 */15 * * * *":    15 * time.Minute,
		"*/10 * * * *":      10 * time.Minute,
		"@every 7s":         7 * time.Second,
		"0 0,30 * * * *":    30 * time.Minute,
		"0 */30 0-23 * * *": 30 * time.Minute,
	}
	for zone, ds := range days {
		loc := mustLoc(t, zone)
		for _, d := range ds {
			day, _ := time.ParseInLocation(time.DateOnly, d, loc)
			for spec, step := range specs {
				s, err := ParseSchedule(spec, loc)
				if err != nil {
					t.Fatal(err)
				}
				prev := s.Next(day.Add(-time.Hour))
				for at := s.Next(prev); at.Before(day.Add(26 * time.Hour)); at = s.Next(at) {
					if got := at.Sub(prev); got != step {
						t.Fatalf("%s %s %q: %s -> %s is %s, want %s", zone, d, spec, prev.UTC(), at.UTC(), got, step)
					}
					prev = at
				}
			}
		}
	}
}

func TestParseScheduleErrors(t *testing.T) {
	cases := []struct{ spec, want string }{
		{"", "empty schedule"},
		{"* * * * * * *", "expected 5 or 6 fields, found 7"},
		{"* * * *", "expected 5 or 6 fields, found 4"},
		{"61 * * * *", "minute 61 out of range [0,59]"},
		{"0 61 * * * *", "minute 61 out of range [0,59]"},
		{"60 * * * * *", "second 60 out of range [0,59]"},
		{"0 24 * * *", "hour 24 out of range [0,23]"},
		{"0 0 0 * *", "day-of-month 0 out of range [1,31]"},
		{"0 0 * 13 *", "month 13 out of range [1,12]"},
		{"0 0 * * 7", "day-of-week 7 out of range [0,6] (0 is Sunday)"},
		{"0 0 * foo *", `month "foo" is neither a number nor a name`},
		{"x * * * *", `minute "x" is not a number`},
		{"*/0 * * * *", `minute "*/0": step must be positive`},
		{"5-3 * * * *", "minute range 5-3 runs backwards"},
		{"1,,2 * * * *", `minute "1,,2": empty list element`},
		{"1-2-3 * * * *", `minute "1-2-3": too many hyphens`},
		{"0 0 30 2 *", "never fires"},
		{"@every", "@every needs a duration"},
		{"@every 500ms", "@every 500ms: interval must be at least 1s"},
		{"@every 1.5s", "whole number of seconds"},
		{"@every soon", `@every: invalid duration "soon"`},
		{"@fortnightly", "unknown descriptor"},
		{"TZ=UTC", "time zone prefix"},
		{"CRON_TZ=Europe/Berlin 0 0 * * *", "time zone prefix"},
	}
	for _, c := range cases {
		_, err := ParseSchedule(c.spec, time.UTC)
		if err == nil {
			t.Errorf("ParseSchedule(%q): no error, want %q", c.spec, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseSchedule(%q) = %q, want it to contain %q", c.spec, err, c.want)
		}
		if !errors.Is(err, ErrBadSchedule) {
			t.Errorf("ParseSchedule(%q): error %v does not match ErrBadSchedule", c.spec, err)
		}
	}
}

func TestParseScheduleAccepts(t *testing.T) {
	for _, spec := range []string{
		"* * * * *", "*/5 * * * * *", "0 0 * * ?", "0 0 ? * MON-FRI", "0 0 1 jan-mar,dec *",
		"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly", "@every 1m30s",
		"  0 12 * * *  ", "5/10 * * * *",
	} {
		if _, err := ParseSchedule(spec, nil); err != nil {
			t.Errorf("ParseSchedule(%q): %v", spec, err)
		}
	}
}

func BenchmarkNext(b *testing.B) {
	loc := mustLoc(b, "Europe/Berlin")
	s, err := ParseSchedule("*/5 * * * * *", loc)
	if err != nil {
		b.Fatal(err)
	}
	at := utc("2026-03-29T00:00:00Z")
	for b.Loop() {
		at = s.Next(at)
	}
}
