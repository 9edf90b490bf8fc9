package scheduler

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// specsHash is the definitions hash of a job set given none
// (Config.DefinitionsHash, Reload's hash empty), as an embedded scheduler
// has it: 12 hex digits of a SHA-256 over what each job declares, in
// order and after defaults — name, schedule and its zone, plugin,
// enabled, timeout, overlap, misfire, retry, jitter, pause_on_failure. So
// the replicas of a service that run the same jobs agree on it, and the
// heartbeat, `slotlock status` and the candidate choice (only replicas
// with the same definitions stand in for each other) see a rollout that
// changes them. A Job's code is not in it: set Config.DefinitionsHash (the
// build's version, say) to tell apart builds whose functions differ.
func specsHash(order []*job) string {
	type declared struct {
		Name, Schedule, Zone, Plugin, Overlap, Misfire string
		Enabled                                        bool
		Timeout, Jitter                                time.Duration
		MisfireDeadline, RetryBackoff                  time.Duration
		MisfireMax, RetryMax, PauseOnFailure           int
		// Omitted without a group: a job's hash is what it was before
		// groups existed.
		Group      string `json:",omitempty"`
		GroupLimit int    `json:",omitempty"`
	}
	all := make([]declared, 0, len(order))
	for _, j := range order {
		s := j.spec
		text, zone := scheduleText(s)
		all = append(all, declared{
			Name: s.Name, Schedule: text, Zone: zone, Plugin: s.Plugin, Overlap: string(s.Overlap),
			Misfire: string(s.Misfire.Policy), Enabled: !s.Disabled, Timeout: s.Timeout, Jitter: s.Jitter,
			MisfireDeadline: s.Misfire.Deadline, RetryBackoff: s.Retry.Backoff,
			MisfireMax: s.Misfire.Max, RetryMax: s.Retry.Max, PauseOnFailure: s.PauseOnFailure,
		})
		if s.Group != nil {
			all[len(all)-1].Group, all[len(all)-1].GroupLimit = s.Group.Name, s.Group.Limit
		}
	}
	b, _ := json.Marshal(all) // strings, numbers and bools: cannot fail
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

// scheduleText is a job's schedule as text and the zone it is read in:
// Spec and Location, or what a parsed Schedule of this package carries,
// or, for a Schedule of another kind, its type.
func scheduleText(s JobSpec) (text, zone string) {
	if s.Location != nil {
		zone = s.Location.String()
	}
	switch sched := s.Schedule.(type) {
	case *specSchedule:
		text, zone = sched.spec, sched.loc.String()
	case *everySchedule:
		text, zone = sched.spec, sched.loc.String()
	default:
		text = fmt.Sprintf("%T", sched)
	}
	if s.Spec != "" {
		text = s.Spec
	}
	return text, zone
}
