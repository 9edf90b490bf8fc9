package scheduler

import (
	"sync"
	"time"
)

// How far shortestInterval looks: a year and a day of slots (every
// pattern of the cron fields repeats within a year, leap days aside), at
// most intervalScan of them from the start, plus a few slots around every
// time-zone transition in that year. A schedule with more slots than that
// a year is dense within its days, and its shortest interval recurs with
// every wrap of its second, minute or hour field, among the first
// intervalScan slots; the cap keeps the check at about a millisecond a
// job.
const (
	intervalHorizon = 366 * 24 * time.Hour
	intervalScan    = 2000
	// intervalAround is how many slots after the last slot before a zone
	// transition are looked at: the interval across the transition and
	// the ones a collapsed spring-forward slot sits between.
	intervalAround = 4
)

// shortestInterval returns the shortest time between two consecutive slots
// of sched from `from` on, over the next year: exact for "@every", and for
// cron specs the shortest of the intervals between the first slots (up to
// 2,000, or a year of them) and of those around each time-zone transition
// of the year — where daylight saving time shortens an interval (a daily
// job in America/New_York is 23 hours apart on the spring-forward day, an
// hourly one in Australia/Lord_Howe can be 30 minutes apart). It returns 0
// when sched has fewer than two slots from `from` on.
func shortestInterval(sched Schedule, from time.Time) time.Duration {
	if e, ok := sched.(*everySchedule); ok {
		return time.Duration(e.every) * time.Second
	}
	if s, ok := sched.(*specSchedule); ok {
		// Every New of a jittered job asks; a process that builds many
		// schedulers (tests, the simulation) asks the same question often.
		key := intervalKey{s.spec, s.loc.String(), from.Truncate(time.Hour)}
		if d, ok := intervalMemo.Load(key); ok {
			return d.(time.Duration)
		}
		d := scanShortestInterval(sched, from)
		intervalMemo.Store(key, d)
		return d
	}
	return scanShortestInterval(sched, from)
}

// intervalMemo remembers shortestInterval's answers for cron specs, by
// spec, zone and hour.
var intervalMemo sync.Map

type intervalKey struct {
	spec, loc string
	hour      time.Time
}

// scanShortestInterval computes what shortestInterval returns.
func scanShortestInterval(sched Schedule, from time.Time) time.Duration {
	var shortest time.Duration
	note := func(a, b time.Time) {
		if d := b.Sub(a); !a.IsZero() && !b.IsZero() && d > 0 && (shortest == 0 || d < shortest) {
			shortest = d
		}
	}
	end := from.Add(intervalHorizon)
	prev := sched.Next(from)
	if prev.IsZero() {
		return 0
	}
	first := prev
	for n := 0; n < intervalScan; n++ {
		t := sched.Next(prev)
		note(prev, t)
		if t.IsZero() || t.After(end) || shortest == time.Second {
			break // slots are whole seconds: nothing is shorter than 1s
		}
		prev = t
	}
	// The zone's transitions, from the slots' own location.
	at := first
	for range 16 { // a zone has at most a few transitions a year
		_, next := at.ZoneBounds()
		if next.IsZero() || next.After(end) || !next.After(at) {
			break
		}
		p := prevSlot(sched, next)
		if p.IsZero() {
			p = sched.Next(next)
		}
		for range intervalAround {
			t := sched.Next(p)
			note(p, t)
			if t.IsZero() {
				break
			}
			p = t
		}
		at = next
	}
	return shortest
}
