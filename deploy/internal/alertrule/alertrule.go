// Package alertrule holds what the deploy tests share to check that an
// alert's threshold follows its job's schedule.
package alertrule

import (
	"fmt"
	"time"

	"github.com/slotlock/slotlock/scheduler"
)

// LongestInterval is the longest time between two consecutive slots of
// the schedule spec in zone ("" for UTC) over 2026 (daylight saving time
// lengthens some intervals).
func LongestInterval(spec, zone string) (time.Duration, error) {
	loc := time.UTC
	if zone != "" {
		var err error
		if loc, err = time.LoadLocation(zone); err != nil {
			return 0, err
		}
	}
	sched, err := scheduler.ParseSchedule(spec, loc)
	if err != nil {
		return 0, err
	}
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var longest time.Duration
	for prev, n := sched.Next(from), 0; prev.Before(from.AddDate(1, 0, 0)) && n < 600_000; n++ {
		next := sched.Next(prev)
		longest = max(longest, next.Sub(prev))
		prev = next
	}
	if longest <= 0 {
		return 0, fmt.Errorf("schedule %q has fewer than two slots in 2026", spec)
	}
	return longest, nil
}
