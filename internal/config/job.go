package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/slotlock/slotlock/internal/strictdecode"
	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/scheduler"
)

// Job is one configured job. The first group of fields mirrors the YAML;
// Load fills the second group for every valid job.
type Job struct {
	Name     string            `yaml:"name" redact:"show"`
	Spec     string            `yaml:"schedule" redact:"show"` // the schedule as written
	Timezone string            `yaml:"timezone" redact:"show"` // IANA name
	Plugin   string            `yaml:"plugin" redact:"show"`
	Enabled  bool              `yaml:"enabled" redact:"show"`
	Timeout  time.Duration     `yaml:"timeout" redact:"show"`
	Overlap  scheduler.Overlap `yaml:"overlap" redact:"show"` // OverlapForbid | OverlapAllow | OverlapReplace
	Misfire  Misfire           `yaml:"misfire"`
	Retry    Retry             `yaml:"retry"`
	// Jitter delays each slot's start by an offset in [0, Jitter), the
	// same on every replica (scheduler.JobSpec.Jitter); 0: none.
	Jitter time.Duration `yaml:"jitter" redact:"show"`
	// PauseOnFailure pauses the job after this many consecutive failed
	// slots (0: never).
	PauseOnFailure int `yaml:"pause_on_failure" redact:"show"`
	// Calendar names an entry of calendars: the job has no slots on its
	// dates, read in Timezone ("": none).
	Calendar string `yaml:"calendar" redact:"show"`
	// Notify says who is told of the job's failed, missed, abandoned and
	// recovered slots.
	Notify []JobNotify `yaml:"notify"`
	// Group names an entry of groups: a run holds one of its permits
	// ("": none).
	Group string `yaml:"group" redact:"show"`
	// Params are the plugin's own settings; the dump shows them as
	// jobs.RedactParams does.
	Params map[string]any `yaml:"params" redact:"params"`

	// Schedule is Spec parsed in Location.
	Schedule scheduler.Schedule `yaml:"-"`
	// Location is Timezone loaded (time/tzdata is embedded).
	Location *time.Location `yaml:"-"`
	// Runner is the job built by the plugin's factory from Params.
	Runner jobs.Job `yaml:"-"`
	// ResolvedCalendar is the named calendar's dates (nil: none);
	// Schedule already skips them.
	ResolvedCalendar *scheduler.Calendar `yaml:"-"`
	// ResolvedGroup is the named group (nil: none).
	ResolvedGroup *scheduler.Group `yaml:"-"`
}

// Misfire says what happens to slots that passed while no replica could
// run them.
type Misfire struct {
	Policy   scheduler.MisfirePolicy `yaml:"policy" redact:"show"` // MisfireSkip | MisfireRunOnce | MisfireRunAll
	Deadline time.Duration           `yaml:"deadline" redact:"show"`
	// Max is how many missed slots run_all runs at most (the newest
	// within the deadline, oldest first); the other policies ignore it.
	Max int `yaml:"max" redact:"show"`
}

// Retry configures extra attempts within one slot.
type Retry struct {
	Max     int           `yaml:"max" redact:"show"`
	Backoff time.Duration `yaml:"backoff" redact:"show"` // doubles each attempt
}

// DefaultJob returns a job with the per-job defaults: timezone UTC,
// enabled, timeout 1h, overlap forbid, misfire skip within 10m (at most
// 10 slots under run_all), no retry (backoff 5s).
func DefaultJob() Job {
	return Job{
		Timezone: "UTC",
		Enabled:  true,
		Timeout:  time.Hour, // the scheduler's zero is "no timeout"; the command's default is not
		Overlap:  scheduler.OverlapForbid,
		Misfire:  Misfire{Policy: scheduler.MisfireSkip, Deadline: scheduler.DefaultDeadline, Max: scheduler.DefaultMisfireMax},
		Retry:    Retry{Max: 0, Backoff: scheduler.DefaultBackoff},
	}
}

func (l *loader) validateJob(c *Config, i int, j *Job, seen map[string]int) {
	base := "jobs[" + strconv.Itoa(i) + "]"
	add := func(field, value string, err error) {
		p := strictdecode.JoinKey(base, field)
		if l.undecodable[p] {
			return
		}
		l.errs = append(l.errs, &Error{Path: p, Index: i, Job: j.Name, Value: shownValue(p, value), Err: err, Where: l.where(p)})
	}
	loc := time.UTC
	if j.Timezone == "Local" {
		add("timezone", j.Timezone, errors.New(`depends on the machine; use an IANA name such as "Europe/Berlin" or "UTC"`))
	} else if tz, err := time.LoadLocation(j.Timezone); err != nil {
		add("timezone", j.Timezone, errors.New(`unknown time zone; use an IANA name such as "Europe/Berlin" or "UTC"`))
	} else {
		loc = tz
		j.Location = tz
	}

	if strings.TrimSpace(j.Spec) == "" {
		add("schedule", "", errors.New(`required: 5 or 6 cron fields, or a descriptor such as "@every 10s" or "@daily"`))
	} else if s, err := scheduler.ParseSchedule(j.Spec, loc); err != nil {
		add("schedule", j.Spec, err)
	} else {
		j.Schedule = s
	}
	l.validateJobCalendar(c, j, add)
	l.validateJobNotify(c, j, add)
	l.validateJobGroup(c, j, add)

	// After the schedule: the jitter's bound is its shortest interval.
	problems := schedulerProblems(j)
	if err, bad := problems["name"]; bad {
		add("name", err.Value, err.Err)
	} else if first, dup := seen[j.Name]; dup {
		add("name", "", fmt.Errorf("duplicate: jobs[%d] has the same name", first))
	} else {
		seen[j.Name] = i
	}
	if j.Timeout <= 0 {
		add("timeout", "", fmt.Errorf("must be positive, got %s", j.Timeout))
	} else if j.Timeout > MaxJobTimeout {
		add("timeout", "", fmt.Errorf("must be at most %s (a week), got %s", MaxJobTimeout, j.Timeout))
	}
	// The file fills in every default, so a zero here was written: where
	// the scheduler reads zero as "the default", the file refuses it.
	if j.Misfire.Deadline == 0 {
		add("misfire.deadline", "", fmt.Errorf("must be positive, got %s", j.Misfire.Deadline))
	}
	if j.Misfire.Max == 0 {
		add("misfire.max", "", fmt.Errorf("must be between 1 and %d, got %d", scheduler.MaxMisfireMax, j.Misfire.Max))
	}
	for _, field := range delegated {
		if err, bad := problems[field]; bad {
			add(field, err.Value, err.Err)
		}
	}
	if j.Retry.Max > MaxRetries {
		add("retry.max", "", fmt.Errorf("must be at most %d, got %d (every attempt runs under the slot's lease)", MaxRetries, j.Retry.Max))
	}
	switch b := j.Retry.Backoff; {
	case b <= 0:
		add("retry.backoff", "", fmt.Errorf("must be positive, got %s", b))
	case b < MinBackoff:
		add("retry.backoff", "", fmt.Errorf("must be at least %s (retries must wait, not spin), got %s", MinBackoff, b))
	case b > MaxBackoff:
		add("retry.backoff", "", fmt.Errorf("must be at most %s, got %s", MaxBackoff, b))
	}
	if j.PauseOnFailure < 0 || j.PauseOnFailure > maxHistoryKeep {
		add("pause_on_failure", "", fmt.Errorf("must be between 0 and %d, got %d", maxHistoryKeep, j.PauseOnFailure))
	}
	l.buildRunner(i, j, add)
}

// delegated are the fields of a job that the scheduler judges
// (scheduler.JobSpec.Validate) besides its name; the file's own rules — a
// zone, the schedule's text, positive durations, a plugin — are checked
// here.
var delegated = []string{"overlap", "misfire.policy", "misfire.deadline", "misfire.max", "jitter", "retry.max"}

// schedulerProblems returns, by field, what scheduler.JobSpec.Validate
// finds wrong with the fields of j it judges (j.Schedule is nil when the
// schedule did not parse: then the jitter gets the sign check only).
func schedulerProblems(j *Job) map[string]*scheduler.FieldError {
	spec := scheduler.JobSpec{Name: j.Name, Schedule: j.Schedule, Overlap: j.Overlap, Jitter: j.Jitter,
		Misfire: scheduler.Misfire{Policy: j.Misfire.Policy, Deadline: j.Misfire.Deadline, Max: j.Misfire.Max},
		Retry:   scheduler.Retry{Max: j.Retry.Max}}
	return fieldErrors(spec.Validate())
}

// fieldErrors indexes the scheduler's joined problems by field (the first
// of each).
func fieldErrors(err error) map[string]*scheduler.FieldError {
	out := map[string]*scheduler.FieldError{}
	var all []error
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		all = joined.Unwrap()
	} else if err != nil {
		all = []error{err}
	}
	for _, e := range all {
		var fe *scheduler.FieldError
		if errors.As(e, &fe) {
			if _, dup := out[fe.Field]; !dup {
				out[fe.Field] = fe
			}
		}
	}
	return out
}

// buildRunner finds the job's plugin and builds its Runner from Params.
func (l *loader) buildRunner(i int, j *Job, add func(field, value string, err error)) {
	if j.Plugin == "" {
		add("plugin", "", fmt.Errorf("required: one of %s", strings.Join(jobs.Names(), ", ")))
		return
	}
	factory, ok := jobs.Lookup(j.Plugin)
	if !ok {
		add("plugin", j.Plugin, fmt.Errorf("not registered; registered plugins: %s", strings.Join(jobs.Names(), ", ")))
		return
	}
	runner, err := build(factory, j.Params)
	if err != nil {
		l.addDecodeErrors("jobs["+strconv.Itoa(i)+"].params", i, j.Name, err)
		return
	}
	if runner == nil {
		add("plugin", j.Plugin, errors.New("the plugin's factory returned neither a job nor an error"))
		return
	}
	j.Runner = runner
}

// build calls a plugin factory; a panic in it becomes an error.
func build(f jobs.Factory, params map[string]any) (j jobs.Job, err error) {
	defer func() {
		if v := recover(); v != nil {
			j, err = nil, fmt.Errorf("the plugin's factory panicked: %v", v)
		}
	}()
	if params == nil {
		params = map[string]any{}
	}
	return f(params)
}
