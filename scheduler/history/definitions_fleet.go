package history

import "time"

// What the fleet's published definitions say of the replicas that run a
// job differently, for a replica that starts or reloads beside them.

// JobJitter is the jitter d publishes (0 without one, or unreadable).
func (d JobDef) JobJitter() time.Duration {
	j, err := time.ParseDuration(d.Jitter)
	if err != nil || j < 0 {
		return 0
	}
	return j
}

// LargestJitters is, per job, the largest jitter among the versions of
// the definitions published at since or later — those some replica still
// runs, when since is a republication interval back.
func LargestJitters(versions []Definitions, since time.Time) map[string]time.Duration {
	out := map[string]time.Duration{}
	eachRecentJob(versions, since, func(j JobDef) { out[j.Name] = max(out[j.Name], j.JobJitter()) })
	return out
}

// AllowsOverlap names the jobs that some version of the definitions
// published at since or later runs under overlap allow: a replica that
// runs one of them under forbid or replace may have runs of it beside its
// own that hold no job lease.
func AllowsOverlap(versions []Definitions, since time.Time) map[string]bool {
	out := map[string]bool{}
	eachRecentJob(versions, since, func(j JobDef) {
		if j.Overlap == "allow" {
			out[j.Name] = true
		}
	})
	return out
}

// HoldsJobLease names the jobs that some version of the definitions
// published at since or later runs under overlap forbid or replace: a
// replica that runs one of them under allow may have runs of it beside
// its own that hold the job lease, and its own hold none.
func HoldsJobLease(versions []Definitions, since time.Time) map[string]bool {
	out := map[string]bool{}
	eachRecentJob(versions, since, func(j JobDef) {
		if j.Overlap == "forbid" || j.Overlap == "replace" {
			out[j.Name] = true
		}
	})
	return out
}

// eachRecentJob calls f with every job definition of the versions
// published at since (to the second, as they are stamped) or later.
func eachRecentJob(versions []Definitions, since time.Time, f func(JobDef)) {
	since = since.Truncate(time.Second)
	for _, d := range versions {
		if d.Published.Before(since) {
			continue
		}
		for _, j := range d.Jobs {
			f(j)
		}
	}
}
