package scheduler

import (
	"time"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/scheduler/history"
)

// Overlap says whether runs of one job may overlap in time.
type Overlap string

const (
	// OverlapForbid (the default): a job-level lease is held, and renewed, for
	// the whole run; a slot that fires while any replica still runs the job
	// is skipped with reason "overlap" on every replica.
	OverlapForbid Overlap = "forbid"
	// OverlapAllow: runs of different slots may overlap.
	OverlapAllow Overlap = "allow"
	// OverlapReplace: runs never overlap either (they hold the job lease),
	// but a newer slot cancels the run still going on, on any replica
	// (cause ErrReplaced: run.canceled reason "replaced" with by_slot), and
	// starts once that run has returned or its lease has expired
	// (replace.go).
	OverlapReplace Overlap = "replace"
)

// MisfirePolicy decides what happens to slots that passed while no replica
// could run them (all replicas down, lock quorum lost, a replica paused
// past the lateness bound).
type MisfirePolicy string

const (
	// MisfireSkip (the default) logs missed slots once and runs none of them.
	MisfireSkip MisfirePolicy = "skip"
	// MisfireRunOnce runs the latest missed slot once, if it is no older
	// than the deadline, after checking that no replica handled it.
	MisfireRunOnce MisfirePolicy = "run_once"
	// MisfireRunAll runs every missed slot no older than the deadline —
	// the newest Max of them, oldest first, one at a time — each after
	// checking that no replica handled it (misfire.go).
	MisfireRunAll MisfirePolicy = "run_all"
)

// recovers reports whether the policy runs missed slots.
func (p MisfirePolicy) recovers() bool { return p == MisfireRunOnce || p == MisfireRunAll }

// Misfire is a job's misfire policy.
type Misfire struct {
	Policy   MisfirePolicy
	Deadline time.Duration // run_once, run_all: a missed slot runs only if now - slot <= Deadline (default 10m)
	// Max (run_all) is how many missed slots one misfire runs at most:
	// the newest Max within the deadline. Default DefaultMisfireMax, at
	// most MaxMisfireMax; ignored by the other policies.
	Max int
}

// Retry is a job's retry policy: up to Max extra attempts within the same
// slot and under the same leases; the wait before attempt n+1 is
// Backoff * 2^(n-1).
type Retry struct {
	Max     int
	Backoff time.Duration // default 5s when Max > 0
}

// JobSpec is one configured job. Name, Job and a schedule are required:
// Spec, the schedule's text (ParseSchedule's forms), which New parses in
// Location; or Schedule, already parsed (Spec is then its text for logs
// and the status). The zero values of the rest mean the defaults shown:
// enabled, no timeout, overlap forbid, misfire skip, no retry, no jitter.
type JobSpec struct {
	Name     string
	Spec     string
	Schedule Schedule       // nil: New parses Spec
	Location *time.Location // the schedule's zone: Spec is parsed in it (nil: UTC); a Schedule already carries it
	// Calendar removes the slots on its dates, read in the schedule's
	// zone (WithCalendar): they are no slots at all. nil: none.
	Calendar *Calendar
	Plugin   string // the plugin that built Job (logs and errors only)
	Job      jobs.Job
	Disabled bool          // a disabled job never fires; Trigger still runs it
	Timeout  time.Duration // a run (all its attempts and backoffs) is canceled after this; 0 means no timeout
	Overlap  Overlap       // "" means OverlapForbid
	Misfire  Misfire
	Retry    Retry
	// Jitter delays each slot's start by an offset in [0, Jitter) drawn
	// from a hash of (job, slot), the same on every
	// replica: the slot starts at its due time (Due). The slot itself —
	// lock key, SLOTLOCK_SLOT, logs — stays the nominal time; lateness,
	// the misfire deadline and the start delay count from the due time.
	// At most the schedule's shortest interval; 0: none.
	Jitter time.Duration
	// PauseOnFailure pauses the job (as `slotlock pause` does, without an
	// end) once its last PauseOnFailure recorded slots all failed; 0 never.
	// It reads the slot history, so it needs HistoryKeep >= it.
	PauseOnFailure int
	// Notify lists who is told of the job's failed, missed, abandoned and
	// recovered slots (Config.Notifier sends). nil: nobody.
	Notify []NotifyRule
	// Group is the job's concurrency group (group.go): a run holds one of
	// its Limit permits, fleet-wide. nil: none.
	Group *Group
}

// withDefaults fills in the spec's defaults, parsing Spec when Schedule
// is nil and wrapping it with the Calendar; the spec must be valid
// (problems).
func (j *JobSpec) withDefaults() JobSpec {
	spec := *j
	spec.Schedule, _ = spec.schedule() // parsed when nil, and without its calendar's dates
	if spec.Overlap == "" {
		spec.Overlap = OverlapForbid
	}
	if spec.Misfire.Policy == "" {
		spec.Misfire.Policy = MisfireSkip
	}
	if spec.Misfire.Deadline == 0 {
		spec.Misfire.Deadline = DefaultDeadline
	}
	if spec.Misfire.Max == 0 {
		spec.Misfire.Max = DefaultMisfireMax
	}
	if spec.Retry.Backoff == 0 {
		spec.Retry.Backoff = DefaultBackoff
	}
	return spec
}

// Describe is what the read model shows of the job (history.ReadStatus,
// history.ReadSlots).
func (j JobSpec) Describe() history.Job {
	sched, _ := j.schedule()
	h := history.Job{Name: j.Name, Spec: j.Spec, Schedule: sched, Location: j.Location, Enabled: !j.Disabled}
	if j.Group != nil {
		h.Group, h.GroupLimit = j.Group.Name, j.Group.Limit
	}
	return h
}

// Definition is what a replica publishes of the job for the command
// (history.Definitions): its name and schedule, not its body. Defaults
// are filled in, so a spec and its defaulted form publish alike.
func (j JobSpec) Definition() history.JobDef {
	spec := j.withDefaults()
	tz := "UTC"
	if spec.Location != nil {
		tz = spec.Location.String()
	}
	d := history.JobDef{Name: spec.Name, Schedule: spec.Spec, Timezone: tz, Overlap: string(spec.Overlap),
		Misfire: string(spec.Misfire.Policy), Enabled: !spec.Disabled}
	if spec.Group != nil {
		d.Group, d.GroupLimit = spec.Group.Name, spec.Group.Limit
	}
	if spec.Jitter > 0 {
		d.Jitter = spec.Jitter.String()
	}
	return d
}
