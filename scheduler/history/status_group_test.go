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
