package scheduler

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"
)

func day(s string) time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t
}

func days(ss ...string) []time.Time {
	out := make([]time.Time, len(ss))
	for i, s := range ss {
		out[i] = day(s)
	}
	return out
}

func calendarSched(t *testing.T, spec, zone string, cal *Calendar) Schedule {
	t.Helper()
	loc := mustLoc(t, zone)
	s, err := ParseSchedule(spec, loc)
	if err != nil {
		t.Fatal(err)
	}
	return WithCalendar(s, cal, loc)
}

// TestCalendarNextInTheJobsZone: a slot is excluded by its date on the
// job's wall clock, not in UTC, and across both DST changes of 2026 in
// Europe/Berlin (29 March 02:00 CET -> 03:00 CEST; 25 October 03:00 CEST ->
// 02:00 CET) every slot of an excluded local date goes, the 23- and 25-hour
// days included, and none of the neighbouring dates.
func TestCalendarNextInTheJobsZone(t *testing.T) {
	cases := []struct {
		name, spec, zone string
		dates            []string
		from             string
		want             []string
	}{
		{"zone date, not UTC date", "0 30 0 * * *", "Europe/Berlin", []string{"2026-12-25"}, "2026-12-23T12:00:00Z", []string{
			"2026-12-23T23:30:00Z", // 24 Dec 00:30 CET
			"2026-12-25T23:30:00Z", // 26 Dec 00:30 CET; 25 Dec 00:30 CET (24 Dec 23:30Z) is excluded
		}},
		{"UTC job, same dates", "0 30 0 * * *", "UTC", []string{"2026-12-25"}, "2026-12-23T12:00:00Z", []string{
			"2026-12-24T00:30:00Z", "2026-12-26T00:30:00Z",
		}},
		{"spring forward: gap slot excluded", "30 2 * * *", "Europe/Berlin", []string{"2026-03-29"}, "2026-03-27T12:00:00Z", []string{
			"2026-03-28T01:30:00Z", // 28 Mar 02:30 CET
			"2026-03-30T00:30:00Z", // 30 Mar 02:30 CEST; the gap slot of 29 Mar (03:00 CEST) is excluded
		}},
		{"spring forward: 23-hour day", "@hourly", "Europe/Berlin", []string{"2026-03-29"}, "2026-03-28T22:00:00Z", []string{
			"2026-03-29T22:00:00Z", // 30 Mar 00:00 CEST: all 23 slots of 29 Mar excluded
			"2026-03-29T23:00:00Z",
		}},
		{"fall back: 25-hour day", "0 */30 * * * *", "Europe/Berlin", []string{"2026-10-25"}, "2026-10-24T21:00:00Z", []string{
			"2026-10-24T21:30:00Z", // 24 Oct 23:30 CEST
			"2026-10-25T23:00:00Z", // 26 Oct 00:00 CET: all 50 slots of 25 Oct excluded
		}},
		{"fall back: neighbour kept", "30 2 * * *", "Europe/Berlin", []string{"2026-10-24"}, "2026-10-23T12:00:00Z", []string{
			"2026-10-25T00:30:00Z", // 25 Oct 02:30 CEST, first occurrence
			"2026-10-26T01:30:00Z", // 26 Oct 02:30 CET
		}},
		{"@every reads the zone's date too", "@every 1h", "Europe/Berlin", []string{"2026-07-02"}, "2026-07-01T20:30:00Z", []string{
			"2026-07-01T21:00:00Z", // 1 Jul 23:00 CEST
			"2026-07-02T22:00:00Z", // 3 Jul 00:00 CEST: 1 Jul 22:00Z (2 Jul 00:00 CEST) on is excluded
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := calendarSched(t, c.spec, c.zone, NewCalendar("c", false, days(c.dates...)))
			at := utc(c.from)
			for i, w := range c.want {
				at = s.Next(at)
				if !at.Equal(utc(w)) {
					t.Fatalf("Next #%d = %s, want %s", i+1, at.UTC().Format(time.RFC3339), w)
				}
				if at.Location().String() != c.zone {
					t.Errorf("Next #%d in %v, want the schedule's zone", i+1, at.Location())
				}
			}
		})
	}
}

// TestCalendarWeekdaysOnly: Saturdays and Sundays, in the job's zone, have
// no slots; listed dates add to them.
func TestCalendarWeekdaysOnly(t *testing.T) {
	berlin := mustLoc(t, "Europe/Berlin")
	s := calendarSched(t, "* * * * * *", "Europe/Berlin", NewCalendar("biz", true, days("2026-12-07")))
	// Friday 4 Dec 2026, 23:59:58 CET.
	from := time.Date(2026, 12, 4, 23, 59, 58, 0, berlin)
	want := []time.Time{
		time.Date(2026, 12, 4, 23, 59, 59, 0, berlin),
		time.Date(2026, 12, 8, 0, 0, 0, 0, berlin), // Sat, Sun and the listed Monday skipped
		time.Date(2026, 12, 8, 0, 0, 1, 0, berlin),
	}
	at := from
	for i, w := range want {
		if at = s.Next(at); !at.Equal(w) {
			t.Fatalf("Next #%d = %s, want %s", i+1, at, w)
		}
	}
	daily := calendarSched(t, "0 0 9 * * *", "Europe/Berlin", NewCalendar("biz", true, nil))
	at = time.Date(2026, 12, 1, 0, 0, 0, 0, berlin)
	for range 20 {
		at = daily.Next(at)
		if wd := at.In(berlin).Weekday(); wd == time.Saturday || wd == time.Sunday {
			t.Fatalf("slot on a %s: %s", wd, at)
		}
	}
}

// TestCalendarAllExcludedTerminates: a schedule whose every slot is
// excluded has no next slot — Next returns the zero Time, promptly — and
// so does one whose slots are excluded for more than five years.
func TestCalendarAllExcludedTerminates(t *testing.T) {
	from := utc("2026-01-01T00:00:00Z")
	for name, s := range map[string]Schedule{
		"weekend job, weekdays only":                    calendarSched(t, "0 0 12 * * SAT,SUN", "Europe/Berlin", NewCalendar("c", true, nil)),
		"every second, weekdays only, on weekends only": calendarSched(t, "* * * * * 0,6", "UTC", NewCalendar("c", true, nil)),
		"yearly on a listed date": calendarSched(t, "0 0 0 25 12 *", "Europe/Berlin", NewCalendar("c", false,
			days("2026-12-25", "2027-12-25", "2028-12-25", "2029-12-25", "2030-12-25", "2031-12-25"))),
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			if got := s.Next(from); !got.IsZero() {
				t.Fatalf("Next = %s, want none", got)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Next took %v", d)
			}
		})
	}
	// Past the listed years the yearly slot is back.
	s := calendarSched(t, "0 0 0 25 12 *", "UTC", NewCalendar("c", false, days("2026-12-25", "2027-12-25")))
	if got := s.Next(from); !got.Equal(utc("2028-12-25T00:00:00Z")) {
		t.Errorf("Next = %s, want 2028-12-25", got)
	}
}

// TestCalendarNextExcluded: the slots a calendar removed are found for
// `slotlock next` and the status page; a schedule without a calendar has
// none.
func TestCalendarNextExcluded(t *testing.T) {
	s := calendarSched(t, "0 0 9 * * *", "Europe/Berlin", NewCalendar("c", true, days("2026-12-24")))
	from := utc("2026-12-21T12:00:00Z") // Monday
	for _, w := range []string{"2026-12-24T08:00:00Z", "2026-12-26T08:00:00Z", "2026-12-27T08:00:00Z", "2027-01-02T08:00:00Z"} {
		from = NextExcluded(s, from)
		if !from.Equal(utc(w)) {
			t.Fatalf("NextExcluded = %s, want %s", from, w)
		}
	}
	plain, _ := ParseSchedule("0 0 9 * * *", time.UTC)
	if got := NextExcluded(plain, from); !got.IsZero() {
		t.Errorf("no calendar: NextExcluded = %s", got)
	}
	if CalendarOf(s).Name() != "c" || CalendarOf(plain) != nil {
		t.Error("CalendarOf")
	}
	if WithCalendar(s, CalendarOf(s), mustLoc(t, "Europe/Berlin")) != s || WithCalendar(s, CalendarOf(s), nil) != s {
		t.Error("wrapping twice with the same calendar made a new schedule")
	}
	// Without a zone of its own, the calendar reads dates in the zone the
	// schedule was parsed in: a JobSpec may leave Location out.
	berlin, _ := ParseSchedule("0 30 0 * * *", mustLoc(t, "Europe/Berlin"))
	xmas := WithCalendar(berlin, NewCalendar("x", false, days("2026-12-25")), nil)
	if got := xmas.Next(utc("2026-12-24T12:00:00Z")); !got.Equal(utc("2026-12-25T23:30:00Z")) {
		t.Errorf("Next = %s, want 26 Dec 00:30 CET", got)
	}
}

// calendarJob is an every-second job whose calendar excludes the bubble's
// first day, 2000-01-01, and the day before it (UTC).
func calendarJob(t *testing.T, name string, rec *recorder) JobSpec {
	spec := everySecond(t, name, rec)
	spec.Calendar = NewCalendar("holidays", false, days("1999-12-31", "2000-01-01"))
	return spec
}

// TestCalendarLoopFiresNoExcludedSlot: the loop never fires a slot on an
// excluded date — no run, no line, no history entry — while a job without
// calendar runs every slot.
func TestCalendarLoopFiresNoExcludedSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		off, on := &recorder{now: time.Now}, &recorder{now: time.Now}
		stop := running(t, e.scheduler("r1", nil, calendarJob(t, "off", off), everySecond(t, "on", on)))
		time.Sleep(5500 * time.Millisecond)
		stop()
		if n := len(off.all()); n != 0 {
			t.Errorf("the excluded job ran %d times", n)
		}
		if n := len(on.all()); n != 5 {
			t.Errorf("the other job ran %d times, want 5", n)
		}
		for _, ev := range e.sink.events(t) {
			if ev.str("job") == "off" {
				t.Errorf("a line about the excluded job: %v", ev)
			}
		}
		if h, err := history.ReadEntries(context.Background(), e.locker, "off", bubbleStart.Add(-time.Hour), 100); err != nil || len(h) != 0 {
			t.Errorf("history of the excluded job: %+v %v", h, err)
		}
	})
}

// TestCalendarReconcilerMissesNoExcludedSlot: the reconciler does not
// expect slots on excluded dates, so it reports none of them missed.
func TestCalendarReconcilerMissesNoExcludedSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		stop := running(t, e.reconciling("r1", nil, time.Second, calendarJob(t, "off", &recorder{now: time.Now})))
		time.Sleep(15 * time.Second)
		stop()
		if missed := where(e.sink.events(t), "slot.missed"); len(missed) != 0 {
			t.Errorf("slot.missed: %v", missed)
		}
		if h, err := history.ReadEntries(context.Background(), e.locker, "off", bubbleStart.Add(-time.Hour), 100); err != nil || len(h) != 0 {
			t.Errorf("history of the excluded job: %+v %v", h, err)
		}
	})
}

// TestCalendarBackfillPlansNoExcludedSlot: a backfill over excluded dates
// plans no slot, and RunSlot refuses an excluded one as no slot of the job.
func TestCalendarBackfillPlansNoExcludedSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{now: time.Now}
		s, err := New(Config{Replica: "bf", Locker: e.locker, Logger: e.sink.logger("bf"),
			MaxClockSkew: time.Second, ReconcileAfter: time.Second, Jobs: []JobSpec{calendarJob(t, "bf", rec)}})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		ctx, now := context.Background(), time.Now()
		plan, err := s.PlanBackfill(ctx, "bf", now.Add(-50*time.Second), now.Add(-20*time.Second))
		if err != nil || len(plan) != 0 {
			t.Fatalf("plan %+v %v, want no slot", plan, err)
		}
		sl := now.Add(-30 * time.Second).Truncate(time.Second)
		if _, err := s.RunSlot(ctx, "bf", sl); !errors.Is(err, ErrBackfillWindow) {
			t.Errorf("RunSlot of an excluded slot: %v", err)
		}
		if len(rec.all()) != 0 {
			t.Error("an excluded slot ran")
		}
	})
}

// TestCalendarMisfireRecoversNoExcludedSlot: replicas starting after an
// outage that spans only excluded slots find nothing missed — no late
// line, no recovery, no run — under run_once and run_all alike.
func TestCalendarMisfireRecoversNoExcludedSlot(t *testing.T) {
	for _, policy := range []MisfirePolicy{MisfireSkip, MisfireRunOnce, MisfireRunAll} {
		t.Run(string(policy), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t)
				if err := e.locker.AdvanceRecord(context.Background(), history.LastKey("job"), time.Now().Unix()-100); err != nil {
					t.Fatal(err)
				}
				rec := &recorder{now: time.Now}
				spec := calendarJob(t, "job", rec)
				spec.Misfire = Misfire{Policy: policy, Deadline: time.Minute}
				var stops []func()
				for _, r := range []string{"r0", "r1", "r2"} {
					stops = append(stops, running(t, e.scheduler(r, nil, spec)))
				}
				time.Sleep(8 * time.Second)
				for _, stop := range stops {
					stop()
				}
				evs := e.sink.events(t)
				if late, rc := where(evs, "slot.skipped"), where(evs, "misfire.recovered"); len(late) != 0 || len(rc) != 0 {
					t.Errorf("skipped %v, recovered %v", late, rc)
				}
				if len(rec.all()) != 0 {
					t.Errorf("%d runs of excluded slots", len(rec.all()))
				}
			})
		})
	}
}

// TestCalendarChangeIsAScheduleChange: a reload that changes a job's
// calendar changes its slots (the job is rescheduled, as for a new
// schedule), one that keeps the same dates under a new name does not.
func TestCalendarChangeIsAScheduleChange(t *testing.T) {
	a := everySecond(t, "j", &recorder{})
	b := a
	b.Calendar = NewCalendar("x", false, days("2026-12-25"))
	if sameSlots(&a, &b) {
		t.Error("adding a calendar kept the slots")
	}
	c := b
	c.Calendar = NewCalendar("y", false, days("2026-12-25"))
	if !sameSlots(&b, &c) {
		t.Error("the same dates under another name changed the slots")
	}
	c.Calendar = NewCalendar("x", true, days("2026-12-25"))
	if sameSlots(&b, &c) {
		t.Error("weekdays_only added kept the slots")
	}
}
