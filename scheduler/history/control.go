package history

import (
	"context"
	"encoding/json"
	"time"
)

// The control audit: every operator action on a job — trigger, pause,
// resume, backfill — is recorded in the fleet log (FleetFamily) with who
// took it (the OS user and host of the command, and its SLOTLOCK_REPLICA
// name), what and when, so `slotlock status`, `slotlock history` and the
// status page show it to everyone, not only to the caller's stderr. Like
// the heartbeats, entries are kept a day (Retention).

// Control actions.
const (
	ControlTrigger  = "trigger"
	ControlPause    = "pause"
	ControlResume   = "resume"
	ControlBackfill = "backfill"
)

// maxControls bounds the control actions Status lists.
const maxControls = 20

// Control is one operator action on a job.
type Control struct {
	Kind    string `json:"kind"`   // "control"
	Action  string `json:"action"` // ControlTrigger, ControlPause, ControlResume, ControlBackfill
	Job     string `json:"job"`
	User    string `json:"user"`    // the OS user that ran the command
	Host    string `json:"host"`    // its host name
	Replica string `json:"replica"` // its SLOTLOCK_REPLICA name
	// Detail says more: a pause's reason and end, a backfill's window, a
	// manual run's outcome.
	Detail string    `json:"detail,omitempty"`
	At     time.Time `json:"at"`
	// Run is a manual run's history entry (trigger), as a slot's.
	Run *Entry `json:"run,omitempty"`
}

// Who renders the actor as "user@host (replica)".
func (c Control) Who() string {
	s := c.User + "@" + c.Host
	if c.Replica != "" && c.Replica != c.Host {
		s += " (" + c.Replica + ")"
	}
	return s
}

// RecordControl appends c to the fleet log (Kind and At filled in when
// empty).
func RecordControl(ctx context.Context, store Store, c Control, now time.Time) error {
	c.Kind = kindControl
	if c.At.IsZero() {
		c.At = now
	}
	c.At = c.At.UTC()
	b, _ := json.Marshal(c) // strings and a time: cannot fail
	return store.AppendLog(ctx, FleetFamily, fleetAppend(string(b), c.At.Unix(), now))
}

// ControlsOf returns the control actions on job (all when job is ""),
// newest first, at most n (all when n <= 0).
func (f Fleet) ControlsOf(job string, n int) []Control {
	var out []Control
	for _, c := range f.Controls {
		if job == "" || c.Job == job {
			out = append(out, c)
			if n > 0 && len(out) == n {
				break
			}
		}
	}
	return out
}
