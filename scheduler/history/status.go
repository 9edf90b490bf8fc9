package history

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Job is what the configuration says of a job, as the views show it
// (scheduler.JobSpec.Describe gives it).
type Job struct {
	Name     string
	Spec     string         // the schedule's text
	Schedule Schedule       // nil: no slot is listed
	Location *time.Location // the schedule's zone; nil: UTC
	Enabled  bool
	// Group and GroupLimit are the job's concurrency group ("": none).
	Group      string
	GroupLimit int
}

// Schedule yields a job's nominal slots: the first after t, or the zero
// time when there is none (a scheduler.Schedule is one).
type Schedule interface {
	Next(t time.Time) time.Time
}

// Status is what `slotlock status` (and the status page) shows: each job's
// state as the lock stores hold it, and the replicas alive.
type Status struct {
	At       time.Time       `json:"at"`
	Hash     string          `json:"definitions_hash"` // of the definitions the reader loaded
	Jobs     []JobStatus     `json:"jobs"`
	Replicas []ReplicaStatus `json:"replicas"`
	// Controls are the latest operator actions on the jobs read (trigger,
	// pause, resume, backfill), newest first.
	Controls []Control `json:"controls"`
	// Nodes are the entries of redis.nodes that are not independent
	// servers, as a reading of the nodes at At found them.
	Nodes []NodeStatus `json:"nodes_dependent,omitempty"`
}

// JobStatus is one job's state.
type JobStatus struct {
	Job      string `json:"job"`
	Schedule string `json:"schedule"`
	Timezone string `json:"timezone"`
	Enabled  bool   `json:"enabled"`
	// NextSlot is the next nominal slot after Status.At, in the job's zone
	// and in UTC (empty when the schedule has none left).
	NextSlot    string `json:"next_slot,omitempty"`
	NextSlotUTC string `json:"next_slot_utc,omitempty"`
	// Calendar names the job's calendar; NextExcluded is the local date
	// (YYYY-MM-DD in the job's zone) of the next slot it removes, empty
	// when none within five years.
	Calendar     string `json:"calendar,omitempty"`
	NextExcluded string `json:"next_excluded,omitempty"`
	// Group names the job's concurrency group and GroupLimit its limit
	// (a run holds one of its permits; a slot that finds none before its
	// lateness bound is skipped group_full).
	Group      string       `json:"group,omitempty"`
	GroupLimit int          `json:"group_limit,omitempty"`
	Pause      *PauseStatus `json:"pause,omitempty"` // set while paused
	Last       *Entry       `json:"last_outcome,omitempty"`
	Running    []RunInfo    `json:"running,omitempty"`
}

// PauseStatus is an active pause.
type PauseStatus struct {
	Since  time.Time  `json:"since"`
	Until  *time.Time `json:"until,omitempty"` // absent: until resumed
	By     string     `json:"by,omitempty"`
	Reason string     `json:"reason,omitempty"`
}

// ReplicaStatus is a replica alive, by its last heartbeat.
type ReplicaStatus struct {
	ReplicaInfo
	Seen time.Time `json:"seen"`
	// Differs is set when the replica runs other job definitions than
	// the reader loaded (never when the reader has no hash: it loaded no
	// definitions to compare with).
	Differs bool `json:"differs"`
}

// statusReaders bounds the jobs ReadStatus reads at once.
const statusReaders = 16

// ReadStatus reads the state of jobs and the live replicas from the
// stores at now; hash is the reader's definitions hash
// (scheduler.Scheduler.DefinitionsHash, or the configuration's).
func ReadStatus(ctx context.Context, store Store, jobs []Job, hash string, now time.Time) (Status, error) {
	st := Status{At: now.UTC(), Hash: hash, Jobs: make([]JobStatus, len(jobs)), Replicas: []ReplicaStatus{}}
	fleet, err := ReadFleet(ctx, store)
	if err != nil {
		return Status{}, err
	}
	st.Controls = controlsOf(fleet, jobs)
	st.Nodes = readNodes(ctx, store)
	running := map[string][]RunInfo{}
	for _, r := range fleet.Alive(now) {
		st.Replicas = append(st.Replicas, ReplicaStatus{ReplicaInfo: r, Seen: r.Seen.UTC(), Differs: hash != "" && r.DefinitionsHash != hash})
		for _, run := range r.Running {
			running[run.Job] = append(running[run.Job], run)
		}
	}
	slices.SortFunc(st.Replicas, func(a, b ReplicaStatus) int {
		if a.Replica != b.Replica {
			if a.Replica < b.Replica {
				return -1
			}
			return 1
		}
		return b.Seen.Compare(a.Seen)
	})
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		sem   = make(chan struct{}, statusReaders)
	)
	for i, job := range jobs {
		st.Jobs[i] = jobStatus(job, now, running[job.Name])
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			err := readJobState(ctx, store, &st.Jobs[i], now)
			if err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if first != nil {
		return Status{}, first
	}
	return st, nil
}

// jobStatus is what the configuration alone says of job.
func jobStatus(job Job, now time.Time, running []RunInfo) JobStatus {
	js := JobStatus{Job: job.Name, Schedule: job.Spec, Enabled: job.Enabled, Timezone: "UTC", Running: running,
		Group: job.Group, GroupLimit: job.GroupLimit}
	loc := job.Location
	if loc == nil {
		loc = time.UTC
	}
	js.Timezone = loc.String()
	if job.Schedule != nil {
		if t := job.Schedule.Next(now); !t.IsZero() {
			js.NextSlot = t.In(loc).Format(time.RFC3339)
			js.NextSlotUTC = t.UTC().Format(time.RFC3339)
		}
		if c, ok := job.Schedule.(calendared); ok {
			js.Calendar = c.CalendarName()
			if t := c.NextExcluded(now); !t.IsZero() {
				js.NextExcluded = t.In(loc).Format(time.DateOnly)
			}
		}
	}
	return js
}

// calendared is a schedule with a calendar (scheduler.WithCalendar).
type calendared interface {
	CalendarName() string
	NextExcluded(t time.Time) time.Time
}

// readJobState adds the pause and the last outcome from the stores.
func readJobState(ctx context.Context, store Store, js *JobStatus, now time.Time) error {
	p, err := store.ReadPause(ctx, js.Job)
	if err != nil {
		return err
	}
	if p.ActiveAt(now) {
		ps := &PauseStatus{Since: p.Since().UTC(), By: p.By, Reason: p.Reason}
		if !p.Until.IsZero() {
			u := p.Until.UTC()
			ps.Until = &u
		}
		js.Pause = ps
	}
	h, err := ReadEntries(ctx, store, js.Job, time.Time{}, 1)
	if err != nil {
		return err
	}
	if len(h) > 0 {
		js.Last = &h[0]
	}
	return nil
}

// controlsOf lists the latest control actions on jobs.
func controlsOf(f Fleet, jobs []Job) []Control {
	names := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		names[j.Name] = true
	}
	out := []Control{}
	for _, c := range f.Controls {
		if names[c.Job] {
			out = append(out, c)
			if len(out) == maxControls {
				break
			}
		}
	}
	return out
}
