package history

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// A job's group and limit are in its status (slotlock status --json, the
// status page's JSON); a job without one shows no group key.
func TestJobStatusGroup(t *testing.T) {
	js := jobStatus(Job{Name: "a", Spec: "@daily", Enabled: true, Group: "heavy", GroupLimit: 2}, time.Unix(0, 0), nil)
	b, _ := json.Marshal(js)
	if !strings.Contains(string(b), `"group":"heavy","group_limit":2`) {
		t.Errorf("status %s, want the group and its limit", b)
	}
	b, _ = json.Marshal(jobStatus(Job{Name: "b", Spec: "@daily"}, time.Unix(0, 0), nil))
	if strings.Contains(string(b), "group") {
		t.Errorf("status %s of a job without a group", b)
	}
}

// A job's group is in its published definition (status from the fleet's
// definitions shows it), compared as a difference; a job without one
// publishes no group key.
func TestJobDefGroup(t *testing.T) {
	a := JobDef{Name: "a", Schedule: "@daily", Group: "heavy", GroupLimit: 2}
	b := a
	b.GroupLimit = 3
	if d := a.Differences(b); len(d) != 1 || d[0] != "group" {
		t.Errorf("Differences = %v, want [group]", d)
	}
	raw, _ := json.Marshal(JobDef{Name: "c", Schedule: "@daily"})
	if strings.Contains(string(raw), "group") {
		t.Errorf("published %s for a job without a group", raw)
	}
}
