package history

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// The job definitions the fleet runs: every replica publishes the names
// and schedules of its jobs in the log of DefinitionsFamily, so that the
// command (status, history, pause, resume) works on jobs its own
// configuration does not declare — embedded jobs included. Replicas that
// run the same definitions write the same entry (only its score, the
// time of the latest publication, moves), so the log holds one entry per
// version of the definitions, kept for a day (Retention).

const (
	// maxDefinitionsBytes bounds one published entry: jobs beyond it are
	// left out (Definitions.Omitted counts them).
	maxDefinitionsBytes = 256 << 10
	// definitionsKeep bounds the versions of the definitions kept.
	definitionsKeep = 100
)

// JobDef is what a replica publishes of one job: what the command needs
// to list its slots, show its status and pause it. The job's body is not
// in it: only a process that has it can run the job.
type JobDef struct {
	Name     string `json:"name"`
	Schedule string `json:"schedule"` // the schedule's text
	Timezone string `json:"timezone"` // IANA name the schedule is read in
	Overlap  string `json:"overlap"`
	Misfire  string `json:"misfire"` // the misfire policy
	Enabled  bool   `json:"enabled"`
	// Group and GroupLimit are the job's concurrency group; absent
	// without one, so that such a job publishes what it did before.
	Group      string `json:"group,omitempty"`
	GroupLimit int    `json:"group_limit,omitempty"`
	// Jitter is the job's jitter (a Go duration), absent without one:
	// a replica that starts, or reloads, with a lower one learns from it
	// how late the others may still fire a slot (JobJitter).
	Jitter string `json:"jitter,omitempty"`
}

// Differences names the fields in which d and o differ, in the
// configuration's words (schedule, timezone, overlap, misfire.policy,
// enabled, group, jitter); none when they agree.
func (d JobDef) Differences(o JobDef) []string {
	var out []string
	for _, f := range []struct {
		name string
		same bool
	}{
		{"schedule", d.Schedule == o.Schedule},
		{"timezone", d.Timezone == o.Timezone},
		{"overlap", d.Overlap == o.Overlap},
		{"misfire.policy", d.Misfire == o.Misfire},
		{"enabled", d.Enabled == o.Enabled},
		{"group", d.Group == o.Group && d.GroupLimit == o.GroupLimit},
		{"jitter", d.Jitter == o.Jitter},
	} {
		if !f.same {
			out = append(out, f.name)
		}
	}
	return out
}

// Definitions is one version of the job definitions, as a replica
// published it.
type Definitions struct {
	Hash string   `json:"hash,omitempty"` // the replicas' definitions hash, if they have one
	Jobs []JobDef `json:"jobs"`
	// Omitted counts the jobs left out to keep the entry within its bound.
	Omitted int `json:"omitted,omitempty"`
	// Published is when a replica last published it (its score), to the
	// second.
	Published time.Time `json:"-"`
}

// Append is d as an append to DefinitionsFamily's log at now. Jobs that
// do not fit in the entry's bound are left out, the last first, and
// counted in Omitted.
func (d Definitions) Append(now time.Time) locking.LogAppend {
	d.Omitted = 0
	b, _ := json.Marshal(d) // strings and bools: cannot fail
	for len(b) > maxDefinitionsBytes && len(d.Jobs) > 0 {
		// Cut by the share of the excess, at least one job a pass.
		cut := max(1, len(d.Jobs)*(len(b)-maxDefinitionsBytes)/len(b))
		d.Jobs, d.Omitted = d.Jobs[:len(d.Jobs)-cut], d.Omitted+cut
		b, _ = json.Marshal(d)
	}
	return locking.LogAppend{
		Entry: locking.LogEntry{Score: now.Unix(), Value: string(b)},
		Keep:  definitionsKeep, Floor: now.Add(-Retention).Unix(),
	}
}

// ReadDefinitions returns the versions of the job definitions the
// replicas published in the last day, the latest published first.
func ReadDefinitions(ctx context.Context, store Store) ([]Definitions, error) {
	entries, err := store.ReadLog(ctx, DefinitionsFamily, 0, definitionsKeep)
	if err != nil {
		return nil, err
	}
	var out []Definitions
	seen := map[string]bool{}
	for _, e := range entries {
		if seen[e.Value] {
			continue // an older score of the same entry, on a store that missed a publication
		}
		seen[e.Value] = true
		var d Definitions
		if json.Unmarshal([]byte(e.Value), &d) != nil {
			continue // not ours: a newer version's record
		}
		d.Published = time.Unix(e.Score, 0).UTC()
		out = append(out, d)
	}
	slices.SortStableFunc(out, func(a, b Definitions) int { return b.Published.Compare(a.Published) })
	return out, nil
}

// PublishedJobs is each job's definition as last published: from the
// latest version that names it. Omitted is how many jobs the latest
// version left out.
func PublishedJobs(versions []Definitions) (jobs map[string]JobDef, omitted int) {
	jobs = map[string]JobDef{}
	for i, d := range versions {
		if i == 0 {
			omitted = d.Omitted
		}
		for _, j := range d.Jobs {
			if _, ok := jobs[j.Name]; !ok {
				jobs[j.Name] = j
			}
		}
	}
	return jobs, omitted
}
