package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// writeFiles writes name -> contents into a new directory and returns the
// path of its config.yaml.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600))
	}
	return filepath.Join(dir, "config.yaml")
}

// calendarErrs loads the files and returns the error lines.
func calendarErrs(t *testing.T, files map[string]string) []string {
	t.Helper()
	_, err := Load(writeFiles(t, files), nil)
	require.Error(t, err)
	return strings.Split(err.Error(), "\n")
}

const holidaysICS = "BEGIN:VCALENDAR\r\n" +
	"VERSION:2.0\r\n" +
	"PRODID:-//example//holidays//EN\r\n" +
	"BEGIN:VEVENT\r\n" +
	"UID:xmas@example\r\n" +
	"SUMMARY:Christmas\r\n" +
	"DTSTART;VALUE=DATE:20261225\r\n" +
	"DTEND;VALUE=DATE:20261227\r\n" + // two days: 25 and 26 (DTEND is exclusive)
	"RRULE:FREQ=YEARLY;COUNT=2\r\n" +
	"END:VEVENT\r\n" +
	"BEGIN:VEVENT\r\n" +
	"DTSTART:20261003T000000\r\n" + // a date-time: its date
	"SUMMARY:Unity\r\n" +
	" Day\r\n" + // folded line
	"BEGIN:VALARM\r\n" +
	"TRIGGER:-PT15M\r\n" +
	"END:VALARM\r\n" +
	"END:VEVENT\r\n" +
	"BEGIN:VEVENT\r\n" +
	"DTSTART;TZID=Europe/Berlin:20270101T100000\r\n" +
	"DTEND;TZID=Europe/Berlin:20270102T090000\r\n" + // ends on 2 Jan, not at midnight: both dates
	"END:VEVENT\r\n" +
	"BEGIN:VEVENT\r\n" +
	"DTSTART;VALUE=DATE:20260501\r\n" +
	"RRULE:FREQ=YEARLY;BYMONTH=5;BYMONTHDAY=1;UNTIL=20280101\r\n" +
	"EXDATE;VALUE=DATE:20270501\r\n" +
	"END:VEVENT\r\n" +
	"BEGIN:VEVENT\r\n" +
	"DTSTART;VALUE=DATE:20260615\r\n" +
	"STATUS:CANCELLED\r\n" +
	"END:VEVENT\r\n" +
	"END:VCALENDAR\r\n"

// TestCalendarsLoad: dates listed, a YAML date list and an .ics file (read
// from the configuration file's directory) make one calendar; a job that
// names it skips its dates in the job's own zone.
func TestCalendarsLoad(t *testing.T) {
	path := writeFiles(t, map[string]string{
		"config.yaml": `
calendars:
  - name: holidays-de
    exclude:
      dates: [2026-12-31, "2026-11-18"]
      file: holidays.ics
  - name: bridge.days
    exclude: {file: bridge.yaml, weekdays_only: true}
jobs:
  - name: report
    schedule: "0 0 9 * * *"
    timezone: Europe/Berlin
    plugin: log
    params: {message: hi}
    calendar: holidays-de
  - name: plain
    schedule: "0 0 9 * * *"
    plugin: log
    params: {message: hi}
`,
		"holidays.ics": holidaysICS,
		"bridge.yaml":  "# bridge days\n- 2026-05-15\n- 2026-10-02\n",
	})
	cfg, err := Load(path, nil)
	require.NoError(t, err)
	require.Len(t, cfg.Calendars, 2)
	require.Equal(t, []string{"2026-05-01", "2026-10-03", "2026-11-18", "2026-12-25", "2026-12-26", "2026-12-31",
		"2027-01-01", "2027-01-02", "2027-12-25", "2027-12-26"}, cfg.Calendars[0].Resolved.Dates())
	require.Equal(t, []string{"2026-05-15", "2026-10-02"}, cfg.Calendars[1].Resolved.Dates())
	require.True(t, cfg.Calendars[1].Resolved.WeekdaysOnly())

	specs := cfg.JobSpecs()
	require.Equal(t, "holidays-de", specs[0].Calendar.Name())
	require.Nil(t, specs[1].Calendar)
	berlin, _ := time.LoadLocation("Europe/Berlin")
	next := specs[0].Schedule.Next(time.Date(2026, 12, 24, 12, 0, 0, 0, berlin))
	require.Equal(t, time.Date(2026, 12, 27, 9, 0, 0, 0, berlin), next, "25, 26 December excluded")

	// A job's calendar can be set by the environment, like any job key.
	cfg, err = Load(path, []string{"SLOTLOCK_JOBS__plain__CALENDAR=bridge.days"})
	require.NoError(t, err)
	require.Equal(t, "bridge.days", cfg.JobSpecs()[1].Calendar.Name())
	_, err = Load(path, []string{"SLOTLOCK_JOBS__plain__CALENDAR=nope"})
	require.ErrorContains(t, err, `jobs[1] "plain": calendar "nope": not defined; calendars: holidays-de, bridge.days (jobs[1].calendar, env SLOTLOCK_JOBS__plain__CALENDAR)`)
}

// TestCalendarErrors: every problem at once, each naming its key path and
// position — and, inside a calendar file, the file and line.
func TestCalendarErrors(t *testing.T) {
	lines := calendarErrs(t, map[string]string{
		"config.yaml": `calendars:
  - name: Bad Name
    exclude: {dates: [2026-02-30, "26-1-1"]}
  - name: empty
    exclude: {}
  - name: ics
    exclude: {file: broken.ics}
  - name: list
    exclude: {file: broken.yaml}
  - name: ics
    exclude: {weekdays_only: true, holidays: [x]}
  - name: other
    exclude: {file: dates.txt}
jobs:
  - name: report
    schedule: "@daily"
    plugin: log
    params: {message: hi}
    calendar: nope
`,
		"broken.ics": "BEGIN:VCALENDAR\n" +
			"BEGIN:VEVENT\n" +
			"DTSTART;VALUE=DATE:20261301\n" +
			"END:VEVENT\n" +
			"BEGIN:VEVENT\n" +
			"SUMMARY:no start\n" +
			"END:VEVENT\n" +
			"BEGIN:VEVENT\n" +
			"DTSTART;VALUE=DATE:20261126\n" +
			"RRULE:FREQ=YEARLY;BYDAY=4TH\n" +
			"END:VEVENT\n" +
			"BEGIN:VEVENT\n" +
			"DTSTART;VALUE=DATE:20261126\n" +
			"DTEND;VALUE=DATE:20261120\n" +
			"END:VEVENT\n" +
			"END:VCALENDAR\n",
		"broken.yaml": "- 2026-12-24\n- christmas\n- [2026-12-25]\n",
		"dates.txt":   "2026-12-24\n",
	})
	for _, want := range []string{
		`unknown key calendars[4].exclude.holidays (`,
		`calendars[0].name "Bad Name": must match [a-z0-9][a-z0-9._-]{0,62}`,
		`calendars[0].exclude.dates[0] "2026-02-30": want a date as YYYY-MM-DD (`,
		`calendars[0].exclude.dates[1] "26-1-1": want a date as YYYY-MM-DD (`,
		`calendars[1].exclude: excludes nothing: give dates, a file or weekdays_only: true (`,
		`calendars[2].exclude.file: ` + "", // the file's problems follow, one per line
		`broken.ics:3: DTSTART "20261301": want a date as YYYYMMDD`,
		`broken.ics:5: VEVENT without a DTSTART`,
		`broken.ics:10: RRULE "FREQ=YEARLY;BYDAY=4TH": BYDAY is not supported`,
		`broken.ics:14: DTEND before DTSTART`,
		`broken.yaml:2: "christmas": want a date as YYYY-MM-DD`,
		`broken.yaml:3: want a date as YYYY-MM-DD, got a list`,
		`calendars[4].name "ics": duplicate: calendars[2] has the same name`,
		`dates.txt: want an iCalendar file (.ics) or a YAML list of dates (.yaml, .yml)`,
		`jobs[0] "report": calendar "nope": not defined: no valid entry in calendars (jobs[0].calendar, `,
	} {
		found := false
		for _, l := range lines {
			found = found || strings.Contains(l, want)
		}
		require.True(t, found, "no line with %q in:\n%s", want, strings.Join(lines, "\n"))
	}
	// A calendar file's line carries the configuration's position too.
	for _, l := range lines {
		if strings.Contains(l, "broken.ics:3:") {
			require.Contains(t, l, "config.yaml:7:")
		}
	}
}

// TestCalendarFileBounds: a calendar file too large, one that is not an
// iCalendar file, or one left open, is refused naming the file.
func TestCalendarFileBounds(t *testing.T) {
	for name, c := range map[string]struct{ file, body, want string }{
		"too large":  {"big.yaml", strings.Repeat("- 2026-12-24\n", maxCalendarFile/13+1), "big.yaml is larger than the limit of 1 MiB"},
		"not ics":    {"x.ics", "hello\n", "x.ics:1: not an iCalendar file: want BEGIN:VCALENDAR first"},
		"left open":  {"open.ics", "BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART:20261224\n", "open.ics:3: BEGIN:VEVENT is never closed"},
		"missing":    {"", "", "cannot read calendar file"},
		"bad yaml":   {"y.yaml", "- [\n", "y.yaml:"},
		"not a list": {"m.yaml", "christmas: 2026-12-25\n", "m.yaml:1: want a list of dates"},
	} {
		t.Run(name, func(t *testing.T) {
			file := c.file
			if file == "" {
				file = "absent.ics"
			}
			files := map[string]string{"config.yaml": "calendars: [{name: c, exclude: {file: " + file + "}}]\n"}
			if c.file != "" {
				files[c.file] = c.body
			}
			lines := calendarErrs(t, files)
			require.Len(t, lines, 1)
			require.Contains(t, lines[0], c.want)
			require.True(t, strings.HasPrefix(lines[0], "calendars[0].exclude.file: "), lines[0])
		})
	}
}

// TestCalendarChangesTheDefinitions: a job's calendar is part of its
// definition — the hash and the reload's comparison change when the
// calendar's dates do (its file included), and a job without a calendar
// hashes as before calendars existed.
func TestCalendarChangesTheDefinitions(t *testing.T) {
	conf := `
calendars: [{name: h, exclude: {file: h.yaml}}]
jobs:
  - name: report
    schedule: "@daily"
    plugin: log
    params: {message: hi}
    calendar: h
`
	load := func(dates string) *Config {
		cfg, err := Load(writeFiles(t, map[string]string{"config.yaml": conf, "h.yaml": dates}), nil)
		require.NoError(t, err)
		return cfg
	}
	a, b := load("- 2026-12-24\n"), load("- 2026-12-25\n")
	require.NotEqual(t, a.DefinitionsHash(), b.DefinitionsHash())
	require.Equal(t, a.DefinitionsHash(), load("- 2026-12-24\n").DefinitionsHash())
	_, _, changed := a.DiffJobs(b)
	require.Equal(t, []string{"report"}, changed)
	require.Empty(t, a.RestartNeeded(b), "calendars reload with the jobs")
	require.Equal(t, b.Calendars, a.WithJobs(b).Calendars)

	// Before calendars: SHA-256 of the redacted jobs' tree, which had no
	// calendar key (nor notify: a job without rules hashes as before).
	// Before calendars and groups: SHA-256 of the redacted jobs' tree,
	// which had no calendar or group key.
	plain := mustLoad(t, minimalJob)
	old := tree(reflect.ValueOf(plain.Jobs), true).([]any)
	for _, j := range old {
		delete(j.(map[string]any), "calendar")
		delete(j.(map[string]any), "notify")
		delete(j.(map[string]any), "group")
	}
	raw, err := json.Marshal(old)
	require.NoError(t, err)
	sum := sha256.Sum256(raw)
	require.Equal(t, hex.EncodeToString(sum[:6]), plain.DefinitionsHash())
}

// TestICSEventDates: how an event's DTSTART, DTEND, DURATION and RRULE
// become dates.
func TestICSEventDates(t *testing.T) {
	for name, c := range map[string]struct {
		props string
		want  []string
	}{
		"all-day, no end":          {"DTSTART;VALUE=DATE:20261225", []string{"2026-12-25"}},
		"all-day, DTEND exclusive": {"DTSTART;VALUE=DATE:20261224\nDTEND;VALUE=DATE:20261226", []string{"2026-12-24", "2026-12-25"}},
		"all-day, DURATION":        {"DTSTART;VALUE=DATE:20261231\nDURATION:P2D", []string{"2026-12-31", "2027-01-01"}},
		"timed, ends at midnight":  {"DTSTART:20261224T120000Z\nDTEND:20261226T000000Z", []string{"2026-12-24", "2026-12-25"}},
		"timed, same day":          {"DTSTART:20261224T090000\nDTEND:20261224T170000", []string{"2026-12-24"}},
		"timed, DURATION":          {"DTSTART:20261224T180000\nDURATION:P1D", []string{"2026-12-24", "2026-12-25"}},
		"yearly leap day":          {"DTSTART;VALUE=DATE:20240229\nRRULE:FREQ=YEARLY;UNTIL=20321231", []string{"2024-02-29", "2028-02-29", "2032-02-29"}},
		"every other year, count":  {"DTSTART;VALUE=DATE:20260101\nRRULE:FREQ=YEARLY;INTERVAL=2;COUNT=3", []string{"2026-01-01", "2028-01-01", "2030-01-01"}},
		"folded property":          {"DTSTART;VALUE=DATE:2026\n 1225", []string{"2026-12-25"}},
	} {
		t.Run(name, func(t *testing.T) {
			ics := "BEGIN:VCALENDAR\nBEGIN:VEVENT\n" + c.props + "\nEND:VEVENT\nEND:VCALENDAR\n"
			dates, errs := parseICS("x.ics", []byte(ics))
			require.Empty(t, errs)
			var got []string
			for _, d := range dates {
				got = append(got, d.Format(time.DateOnly))
			}
			require.Equal(t, c.want, got)
		})
	}
	for name, c := range map[string]struct{ props, want string }{
		"DTEND and DURATION": {"DTSTART;VALUE=DATE:20261224\nDTEND;VALUE=DATE:20261226\nDURATION:P1D", "x.ics:5: DTEND and DURATION together"},
		"hours":              {"DTSTART:20261224T090000\nDURATION:PT8H", `x.ics:4: DURATION "PT8H": only whole days or weeks`},
		"monthly":            {"DTSTART;VALUE=DATE:20261224\nRRULE:FREQ=MONTHLY", "x.ics:4: RRULE \"FREQ=MONTHLY\": only FREQ=YEARLY"},
		"RDATE":              {"DTSTART;VALUE=DATE:20261224\nRDATE;VALUE=DATE:20261231", "x.ics:4: RDATE is not supported"},
		"too long":           {"DTSTART;VALUE=DATE:20260101\nDTEND;VALUE=DATE:20280101", "x.ics:3: the event spans 730 days, at most 366"},
		"mismatched END":     {"DTSTART;VALUE=DATE:20261224\nEND:VTODO", "x.ics:4: END:VTODO does not close the open component"},
	} {
		t.Run(name, func(t *testing.T) {
			ics := "BEGIN:VCALENDAR\nBEGIN:VEVENT\n" + c.props + "\nEND:VEVENT\nEND:VCALENDAR\n"
			_, errs := parseICS("x.ics", []byte(ics))
			require.NotEmpty(t, errs)
			require.Contains(t, errs[0].Error(), c.want)
		})
	}
}

// TestICSDatesBounded: yearly rules that would expand to more dates than
// a calendar holds are refused, not expanded.
func TestICSDatesBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("BEGIN:VCALENDAR\n")
	for i := range 1000 {
		fmt.Fprintf(&b, "BEGIN:VEVENT\nDTSTART;VALUE=DATE:%d0101\nRRULE:FREQ=YEARLY\nEND:VEVENT\n", 1000+i)
	}
	b.WriteString("END:VCALENDAR\n")
	_, errs := parseICS("x.ics", []byte(b.String()))
	require.Len(t, errs, 1)
	require.Contains(t, errs[0].Error(), "more than 100000 dates")
}

// TestCalendarFileNotRegular: a named pipe as a calendar file is refused
// at once, not waited on for a writer.
func TestCalendarFileNotRegular(t *testing.T) {
	path := writeFiles(t, map[string]string{"config.yaml": "calendars: [{name: c, exclude: {file: pipe.ics}}]\n"})
	require.NoError(t, syscall.Mkfifo(filepath.Join(filepath.Dir(path), "pipe.ics"), 0o600))
	_, err := Load(path, nil)
	require.ErrorContains(t, err, "calendars[0].exclude.file: cannot read calendar file: ")
	require.ErrorContains(t, err, "not a regular file")
}

// TestCalendarFileErrorsEchoBounded: a huge value in a calendar file is
// quoted cut, as every echo of the loader is.
func TestCalendarFileErrorsEchoBounded(t *testing.T) {
	long := strings.Repeat("9", 10_000)
	_, errs := parseICS("x.ics", []byte("BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART:"+long+"\nRRULE:FREQ=YEARLY;"+long+"=1\nEND:VEVENT\nEND:VCALENDAR\n"))
	require.Len(t, errs, 1)
	require.Less(t, len(errs[0].Error()), 300)
	require.Contains(t, errs[0].Error(), "(10000 bytes)")
	_, errs = parseDateList("x.yaml", []byte("- "+long+"\n"))
	require.Len(t, errs, 1)
	require.Less(t, len(errs[0].Error()), 300)
}
