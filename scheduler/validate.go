package scheduler

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The rules a configuration must follow, one home for each: New checks
// them for library callers, and the command's loader asks JobSpec.Validate
// and Config.Validate for the same texts. A zero value stands for its
// default and is never a problem.

// FieldError is one problem with a field of a JobSpec or a Config.
// Validate returns them joined (errors.Join): errors.As finds the first,
// and the joined error's Unwrap() []error lists all.
type FieldError struct {
	// InJob is set for a field of a JobSpec; Job is then its name (as
	// given, maybe empty or malformed).
	InJob bool
	Job   string
	// Field names the field: a JobSpec's as the configuration file spells
	// it ("name", "misfire.deadline", "jitter"), a Config's by its Go name
	// ("MaxClockSkew").
	Field string
	// Value, when not "", is the value refused, quoted in the message
	// (a word that must be one of a list).
	Value string
	Err   error // what is wrong
}

// Error renders the problem as `scheduler: job "a": misfire.deadline:
// must be positive, got -1m0s`.
func (e *FieldError) Error() string {
	var b strings.Builder
	b.WriteString("scheduler: ")
	if e.InJob {
		b.WriteString("job " + strconv.Quote(e.Job) + ": ")
	}
	b.WriteString(e.Field)
	if e.Value != "" {
		b.WriteString(" " + strconv.Quote(e.Value))
	}
	b.WriteString(": " + e.Err.Error())
	return b.String()
}

// Unwrap returns what is wrong.
func (e *FieldError) Unwrap() error { return e.Err }

// Validate reports every problem of the job's spec, each a *FieldError
// naming the job and the field, joined; nil when New would take it (zero
// values stand for their defaults). The jitter's bound is the schedule's
// shortest interval over the year from now.
func (j JobSpec) Validate() error {
	return errors.Join(j.problems(time.Now())...)
}

// problems lists the spec's problems; now is when the jitter's bound is
// looked for from.
func (j JobSpec) problems(now time.Time) []error {
	var errs []error
	add := func(field, value string, err error) {
		if err != nil {
			errs = append(errs, &FieldError{InJob: true, Job: j.Name, Field: field, Value: value, Err: err})
		}
	}
	add("name", "", checkJobName(j.Name))
	sched, err := j.schedule()
	add("schedule", j.Spec, err)
	if j.Job == nil {
		add("job", "", fmt.Errorf("required (plugin %q not built)", j.Plugin))
	}
	if j.Overlap != "" {
		add("overlap", string(j.Overlap), checkOverlap(j.Overlap))
	}
	if j.Misfire.Policy != "" {
		add("misfire.policy", string(j.Misfire.Policy), checkMisfirePolicy(j.Misfire.Policy))
	}
	if j.Misfire.Deadline != 0 {
		add("misfire.deadline", "", checkDeadline(j.Misfire.Deadline))
	}
	if j.Misfire.Max != 0 {
		add("misfire.max", "", checkMisfireMax(j.Misfire.Max))
	}
	add("timeout", "", notNegative(j.Timeout))
	if j.Retry.Max < 0 {
		add("retry.max", "", fmt.Errorf("must not be negative, got %d", j.Retry.Max))
	}
	add("retry.backoff", "", notNegative(j.Retry.Backoff))
	if j.PauseOnFailure < 0 {
		add("pause_on_failure", "", fmt.Errorf("must not be negative, got %d", j.PauseOnFailure))
	}
	add("jitter", "", checkJitter(j.Jitter, sched, now))
	if j.Group != nil {
		add(checkGroup(j.Group))
	}
	return errs
}

// schedule returns the job's schedule: Schedule, else Spec parsed in
// Location (nil when it does not parse, or there is none), without the
// slots its Calendar excludes.
func (j JobSpec) schedule() (Schedule, error) {
	switch {
	case j.Schedule != nil:
		return WithCalendar(j.Schedule, j.Calendar, j.Location), nil
	case strings.TrimSpace(j.Spec) == "":
		return nil, errors.New("required: Spec (the schedule's text) or Schedule")
	}
	s, err := ParseSchedule(j.Spec, j.Location)
	if err != nil {
		return nil, err
	}
	return WithCalendar(s, j.Calendar, j.Location), nil
}

// Validate reports every problem of the configuration — its own settings,
// each job's spec (JobSpec.Validate), job names given twice, a
// PauseOnFailure the history cannot serve — each a *FieldError, joined;
// nil when New would take it (zero values stand for their defaults).
func (c Config) Validate() error {
	return errors.Join(c.problems(time.Now())...)
}

// problems lists the configuration's problems, judging the jobs at now.
func (c Config) problems(now time.Time) []error {
	errs := c.settingsProblems()
	keep := c.HistoryKeep
	if keep == 0 {
		keep = DefaultHistoryKeep
	}
	seen := make(map[string]bool, len(c.Jobs))
	for _, j := range c.Jobs {
		errs = append(errs, j.problems(now)...)
		if seen[j.Name] {
			errs = append(errs, &FieldError{InJob: true, Job: j.Name, Field: "name", Err: errors.New("configured twice")})
		}
		seen[j.Name] = true
		if err := checkPauseHistory(j, keep); err != nil {
			errs = append(errs, err)
		}
	}
	return append(errs, groupLimits(c.Jobs)...)
}

// settingsProblems lists the problems of c's own settings (not its jobs').
func (c Config) settingsProblems() []error {
	var errs []error
	add := func(field string, err error) {
		if err != nil {
			errs = append(errs, &FieldError{Field: field, Err: err})
		}
	}
	if c.Locker == nil {
		add("Locker", errors.New("required"))
	}
	if c.LockTTL != 0 && c.LockTTL < 100*time.Millisecond {
		add("LockTTL", fmt.Errorf("too short: at least 100ms, got %s", c.LockTTL))
	}
	add("MaxClockSkew", checkClockSkew(c.MaxClockSkew))
	add("ShutdownGrace", notNegative(c.ShutdownGrace))
	add("Lateness", notNegative(c.Lateness))
	skew := c.MaxClockSkew
	if skew == 0 {
		skew = DefaultMaxClockSkew
	}
	maxLate := skew + time.Second
	if c.Lateness > maxLate {
		add("Lateness", fmt.Errorf("must be at most MaxClockSkew + 1s (%s), got %s", maxLate, c.Lateness))
	}
	add("Fallback", notNegative(c.Fallback))
	late := c.Lateness
	if late <= 0 {
		late = maxLate
	}
	if c.Fallback > 0 && c.Fallback >= late {
		// A fallback that fires past the lateness bound would find the
		// slot late: a slot whose candidates are gone would be missed.
		add("Fallback", fmt.Errorf("must be less than the lateness bound (%s), got %s", late, c.Fallback))
	}
	if c.SecondDelay > 0 && c.SecondDelay >= late {
		// Likewise for a slot whose first candidate is gone.
		add("SecondDelay", fmt.Errorf("must be less than the lateness bound (%s), got %s", late, c.SecondDelay))
	}
	return errs
}

// checkPauseHistory reports a PauseOnFailure longer than the history kept
// (keep entries per job): the failures it counts are read from there.
func checkPauseHistory(j JobSpec, keep int) error {
	if j.PauseOnFailure > 0 && j.PauseOnFailure > keep {
		return &FieldError{InJob: true, Job: j.Name, Field: "pause_on_failure",
			Err: fmt.Errorf("%d needs history.keep >= it (%d)", j.PauseOnFailure, max(keep, 0))}
	}
	return nil
}

// jobName is the form of a job name: it becomes the lock stores' hash tag
// and a metric label.
var jobName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// checkJobName reports whether name can name a job.
// CheckName checks a name under the job names' rule; the configuration's
// other names (calendars) follow it too.
func CheckName(name string) error { return checkJobName(name) }

func checkJobName(name string) error {
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

func notNegative(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("must not be negative, got %s", d)
	}
	return nil
}

// checkClockSkew reports whether d can be MaxClockSkew.
func checkClockSkew(d time.Duration) error {
	switch {
	case d < 0:
		return fmt.Errorf("must not be negative, got %s", d)
	case d > MaxClockSkewLimit:
		return fmt.Errorf("must be at most %s (done markers live about twice as long), got %s", MaxClockSkewLimit, d)
	}
	return nil
}

// checkDeadline reports whether d can be a misfire deadline.
func checkDeadline(d time.Duration) error {
	switch {
	case d <= 0:
		return fmt.Errorf("must be positive, got %s", d)
	case d > MaxDeadline:
		return fmt.Errorf("must be at most %s (run_once done markers live that long), got %s", MaxDeadline, d)
	}
	return nil
}

// checkNext reports whether n slots can be asked of Next.
func checkNext(n int) error {
	if n < 1 || n > MaxNext {
		return fmt.Errorf("n must be between 1 and %d, got %d", MaxNext, n)
	}
	return nil
}

// checkOverlap reports whether o is an overlap policy.
func checkOverlap(o Overlap) error {
	switch o {
	case OverlapForbid, OverlapAllow, OverlapReplace:
		return nil
	}
	return fmt.Errorf("want %s, %s or %s", OverlapForbid, OverlapAllow, OverlapReplace)
}

// checkMisfirePolicy reports whether p is a misfire policy.
func checkMisfirePolicy(p MisfirePolicy) error {
	if p != MisfireSkip && p != MisfireRunOnce && p != MisfireRunAll {
		return fmt.Errorf("want %s, %s or %s", MisfireSkip, MisfireRunOnce, MisfireRunAll)
	}
	return nil
}

// checkMisfireMax reports whether n can be misfire.max.
func checkMisfireMax(n int) error {
	if n < 1 || n > MaxMisfireMax {
		return fmt.Errorf("must be between 1 and %d, got %d", MaxMisfireMax, n)
	}
	return nil
}

// checkJitter reports whether d can be the jitter of a job on sched: not
// negative, and no longer than the schedule's shortest interval between
// two slots over the year from now (shortestInterval), so that slots still
// start in their order and one slot's start never passes the next slot's.
// A nil sched (a schedule that did not parse) gets the sign check only.
func checkJitter(d time.Duration, sched Schedule, now time.Time) error {
	if d < 0 {
		return fmt.Errorf("must not be negative, got %s", d)
	}
	if d == 0 || sched == nil {
		return nil
	}
	if gap := shortestInterval(sched, now); gap > 0 && d > gap {
		return fmt.Errorf("must be at most the schedule's shortest interval between two slots (%s), got %s", gap, d)
	}
	return nil
}
