package scheduler

import (
	"errors"
	"fmt"
	"regexp"
	"time"
)

// The rules a configuration must follow, checked by New for library callers
// and by the command's loader with the same texts (one home for each).

// jobName is the form of a job name: it becomes the lock stores' hash tag
// and a metric label.
var jobName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// CheckJobName reports whether name can name a job.
func CheckJobName(name string) error {
	if name == "" {
		return errors.New("required")
	}
	if !jobName.MatchString(name) {
		return errors.New("must match [a-z0-9][a-z0-9._-]{0,62} (lower case, digits, '.', '_', '-'; at most 63)")
	}
	return nil
}

// Ceilings. Done markers live for about MaxClockSkew (every slot) and
// misfire.deadline (run_once jobs) in the lock stores, so neither may grow
// without bound; Next's n bounds what one call allocates.
const (
	MaxClockSkewLimit = time.Minute
	MaxDeadline       = 24 * time.Hour
	MaxNext           = 10_000
	// MaxMisfireMax bounds misfire.max: run_all runs the slots one at a
	// time, each after a look at the slot history, which keeps
	// DefaultHistoryKeep entries per job by default.
	MaxMisfireMax = 1_000
)

// CheckClockSkew reports whether d can be MaxClockSkew.
func CheckClockSkew(d time.Duration) error {
	switch {
	case d < 0:
		return fmt.Errorf("must not be negative, got %s", d)
	case d > MaxClockSkewLimit:
		return fmt.Errorf("must be at most %s (done markers live about twice as long), got %s", MaxClockSkewLimit, d)
	}
	return nil
}

// CheckDeadline reports whether d can be a misfire deadline.
func CheckDeadline(d time.Duration) error {
	switch {
	case d <= 0:
		return fmt.Errorf("must be positive, got %s", d)
	case d > MaxDeadline:
		return fmt.Errorf("must be at most %s (run_once done markers live that long), got %s", MaxDeadline, d)
	}
	return nil
}

// CheckNext reports whether n slots can be asked of Next.
func CheckNext(n int) error {
	if n < 1 || n > MaxNext {
		return fmt.Errorf("n must be between 1 and %d, got %d", MaxNext, n)
	}
	return nil
}

// CheckOverlap reports whether o is an overlap policy.
func CheckOverlap(o Overlap) error {
	switch o {
	case OverlapForbid, OverlapAllow, OverlapReplace:
		return nil
	}
	return fmt.Errorf("want %s, %s or %s", OverlapForbid, OverlapAllow, OverlapReplace)
}

// CheckMisfirePolicy reports whether p is a misfire policy.
func CheckMisfirePolicy(p MisfirePolicy) error {
	if p != MisfireSkip && p != MisfireRunOnce && p != MisfireRunAll {
		return fmt.Errorf("want %s, %s or %s", MisfireSkip, MisfireRunOnce, MisfireRunAll)
	}
	return nil
}

// CheckMisfireMax reports whether n can be misfire.max.
func CheckMisfireMax(n int) error {
	if n < 1 || n > MaxMisfireMax {
		return fmt.Errorf("must be between 1 and %d, got %d", MaxMisfireMax, n)
	}
	return nil
}

// CheckJitter reports whether d can be the jitter of a job on sched: not
// negative, and no longer than the schedule's shortest interval between
// two slots over the year from now (ShortestInterval), so that slots still
// start in their order and one slot's start never passes the next slot's.
// A nil sched (a schedule that did not parse) gets the sign check only.
func CheckJitter(d time.Duration, sched Schedule, now time.Time) error {
	if d < 0 {
		return fmt.Errorf("must not be negative, got %s", d)
	}
	if d == 0 || sched == nil {
		return nil
	}
	if gap := ShortestInterval(sched, now); gap > 0 && d > gap {
		return fmt.Errorf("must be at most the schedule's shortest interval between two slots (%s), got %s", gap, d)
	}
	return nil
}
