package scheduler

import (
	"slices"
	"time"
)

// Calendar is a set of local dates on which a job has no slots: listed
// dates (holidays) and, with WeekdaysOnly, every Saturday and Sunday. A
// date is judged in the job's time zone: a slot is excluded when its
// instant, read on the job's wall clock, falls on an excluded date.
//
// An excluded slot is not a slot at all. WithCalendar removes it from the
// schedule, so the loop never fires it, the reconciler never expects it,
// misfire recovery and backfill never plan it, and `slotlock next` shows
// the schedule without it. A Calendar is immutable once made.
type Calendar struct {
	name         string
	weekdaysOnly bool
	dates        map[civilDate]bool
}

// civilDate is a date without a zone.
type civilDate struct {
	y int
	m time.Month
	d int
}

func dateOf(t time.Time) civilDate {
	y, m, d := t.Date()
	return civilDate{y, m, d}
}

func (c civilDate) String() string {
	return time.Date(c.y, c.m, c.d, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
}

// NewCalendar returns the calendar named name that excludes each of dates
// (the year, month and day each shows in its own location; the clock time
// is ignored) and, with weekdaysOnly, every Saturday and Sunday.
func NewCalendar(name string, weekdaysOnly bool, dates []time.Time) *Calendar {
	c := &Calendar{name: name, weekdaysOnly: weekdaysOnly, dates: make(map[civilDate]bool, len(dates))}
	for _, d := range dates {
		c.dates[dateOf(d)] = true
	}
	return c
}

// Name is the calendar's name ("" for nil).
func (c *Calendar) Name() string {
	if c == nil {
		return ""
	}
	return c.name
}

// WeekdaysOnly reports whether Saturdays and Sundays are excluded.
func (c *Calendar) WeekdaysOnly() bool { return c != nil && c.weekdaysOnly }

// Dates returns the listed dates as YYYY-MM-DD, sorted.
func (c *Calendar) Dates() []string {
	if c == nil {
		return nil
	}
	out := make([]string, 0, len(c.dates))
	for d := range c.dates {
		out = append(out, d.String())
	}
	slices.Sort(out)
	return out
}

// Equal reports whether c and o exclude the same dates (names aside);
// nil excludes none.
func (c *Calendar) Equal(o *Calendar) bool {
	return c.WeekdaysOnly() == o.WeekdaysOnly() && slices.Equal(c.Dates(), o.Dates())
}

// Excludes reports whether t's date, read in t's own location, is
// excluded.
func (c *Calendar) Excludes(t time.Time) bool {
	if c == nil {
		return false
	}
	if c.weekdaysOnly {
		if wd := t.Weekday(); wd == time.Saturday || wd == time.Sunday {
			return true
		}
	}
	return c.dates[dateOf(t)]
}

// calendarSchedule is a schedule without the slots whose local date (in
// loc) its calendar excludes.
type calendarSchedule struct {
	base Schedule
	cal  *Calendar
	loc  *time.Location
}

// calendarHorizon bounds the search past excluded slots: a schedule whose
// every slot in that time is excluded (a yearly slot on a listed date)
// has no next slot, as a schedule that never fires within five years has
// none (Schedule.Next).
const calendarHorizon = 5

// WithCalendar returns s without the slots that cal excludes, their dates
// read in loc (nil: the zone ParseSchedule gave s, else UTC). A nil cal
// returns s itself; s already wrapped with cal is returned as it is.
func WithCalendar(s Schedule, cal *Calendar, loc *time.Location) Schedule {
	if cal == nil || s == nil {
		return s
	}
	if loc == nil {
		loc = time.UTC
		if z, ok := s.(zoned); ok {
			loc = z.zone()
		}
	}
	if cs, ok := s.(*calendarSchedule); ok && cs.cal == cal && cs.loc.String() == loc.String() {
		return s
	}
	return &calendarSchedule{base: s, cal: cal, loc: loc}
}

// zoned is a schedule that knows its zone (ParseSchedule's).
type zoned interface{ zone() *time.Location }

func (s *specSchedule) zone() *time.Location     { return s.loc }
func (s *everySchedule) zone() *time.Location    { return s.loc }
func (s *calendarSchedule) zone() *time.Location { return s.loc }

// Next returns the first slot strictly after t on a date the calendar
// keeps; zero when none within five years of t.
func (s *calendarSchedule) Next(t time.Time) time.Time {
	limit := t.AddDate(calendarHorizon, 0, 0)
	// Each round skips at least one whole excluded date, so the rounds are
	// bounded by the days in the horizon.
	for range calendarHorizon*366 + 2 {
		x := s.base.Next(t)
		if x.IsZero() || x.After(limit) {
			return time.Time{}
		}
		if !s.cal.Excludes(x.In(s.loc)) {
			return x
		}
		// Whole seconds: the first slot strictly after this is the
		// first at or after the next local midnight.
		t = nextDayStart(x, s.loc).Add(-time.Second)
	}
	return time.Time{}
}

// CalendarName names the calendar (the status shows it).
func (s *calendarSchedule) CalendarName() string { return s.cal.Name() }

// NextExcluded is NextExcluded(s, t).
func (s *calendarSchedule) NextExcluded(t time.Time) time.Time { return NextExcluded(s, t) }

func (s *calendarSchedule) String() string {
	if st, ok := s.base.(interface{ String() string }); ok {
		return st.String()
	}
	return ""
}

// nextDayStart returns the first instant of the local date after x's in
// loc. Where a zone change skips midnight, the day starts at the change.
func nextDayStart(x time.Time, loc *time.Location) time.Time {
	day := dateOf(x.In(loc))
	n := time.Date(day.y, day.m, day.d+1, 0, 0, 0, 0, loc)
	// time.Date may resolve a midnight that does not exist to an instant
	// before the gap, still on day: the next day then starts at the zone
	// change that ends the gap.
	for i := 0; i < 4 && !dateOf(n.In(loc)).after(day); i++ {
		_, end := n.ZoneBounds()
		if end.IsZero() || !end.After(n) {
			n = n.Add(time.Hour)
			continue
		}
		n = end
	}
	return n
}

func (c civilDate) after(o civilDate) bool {
	if c.y != o.y {
		return c.y > o.y
	}
	if c.m != o.m {
		return c.m > o.m
	}
	return c.d > o.d
}

// CalendarOf returns the calendar that s skips, nil when none.
func CalendarOf(s Schedule) *Calendar {
	if cs, ok := s.(*calendarSchedule); ok {
		return cs.cal
	}
	return nil
}

// NextExcluded returns the first slot strictly after t that s's calendar
// removed (a slot of the schedule without its calendar, on an excluded
// date); zero when s has no calendar or no such slot within five years.
// `slotlock next` and the status page show it.
func NextExcluded(s Schedule, t time.Time) time.Time {
	cs, ok := s.(*calendarSchedule)
	if !ok {
		return time.Time{}
	}
	limit := t.AddDate(calendarHorizon, 0, 0)
	for range calendarHorizon*366 + 2 {
		x := cs.base.Next(t)
		if x.IsZero() || x.After(limit) {
			return time.Time{}
		}
		if cs.cal.Excludes(x.In(cs.loc)) {
			return x
		}
		// A kept date: go on from the next date the calendar excludes.
		day := nextExcludedDate(cs.cal, x.In(cs.loc), limit.In(cs.loc))
		if day.IsZero() {
			return time.Time{}
		}
		t = day.Add(-time.Second)
	}
	return time.Time{}
}

// nextExcludedDate returns the start of the first date after x's (in x's
// location) that cal excludes, zero when none up to limit.
func nextExcludedDate(cal *Calendar, x, limit time.Time) time.Time {
	loc := x.Location()
	for d := nextDayStart(x, loc); !d.After(limit); d = nextDayStart(d, loc) {
		if cal.Excludes(d.In(loc)) {
			return d
		}
	}
	return time.Time{}
}
