package cli_test

import (
	"strings"
	"testing"
)

// slotlock validate on concurrency groups: exit 2 and every group error
// on its own line, each naming the key path (and the job) and the file
// position; a valid group validates.
func TestValidateGroups(t *testing.T) {
	cfg := writeConfig(t, `
groups:
  - {name: db-heavy, limit: 0}
  - {name: db-heavy, limit: 2}
jobs:
  - {name: report, schedule: "@every 1s", plugin: log, params: {message: hi}, group: nope}
`)
	_, errOut, code := slotlock(t, nil, "validate", "--config", cfg)
	if code != 2 {
		t.Fatalf("exit %d, want 2; stderr:\n%s", code, errOut)
	}
	for _, want := range []string{
		"groups[0].limit: must be between 1 and 100, got 0 (" + cfg + ":3:",
		`groups[1].name "db-heavy": duplicate: groups[0] has the same name (` + cfg + ":4:",
		`jobs[0] "report": group "nope": not defined`,
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	ok := writeConfig(t, `
groups: [{name: db-heavy, limit: 2}]
jobs:
  - {name: report, schedule: "@every 1s", plugin: log, params: {message: hi}, group: db-heavy}
`)
	if _, errOut, code := slotlock(t, nil, "validate", "--config", ok); code != 0 {
		t.Fatalf("a valid group: exit %d:\n%s", code, errOut)
	}
}
