package config

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/scheduler"
)

// TestGroupsLoad: a job's group resolves to the scheduler's, limit and
// all; a job without one has none; groups reload with the jobs.
func TestGroupsLoad(t *testing.T) {
	cfg := mustLoad(t, `groups:
  - {name: db-heavy, limit: 2}
  - {name: unused, limit: 1}
jobs:
  - {name: a, schedule: "@every 1s", plugin: log, params: {message: a}, group: db-heavy}
  - {name: b, schedule: "@every 1s", plugin: log, params: {message: b}}
`)
	specs := cfg.JobSpecs()
	require.Equal(t, &scheduler.Group{Name: "db-heavy", Limit: 2}, specs[0].Group)
	require.Nil(t, specs[1].Group)

	bigger := mustLoad(t, `groups:
  - {name: db-heavy, limit: 3}
jobs:
  - {name: a, schedule: "@every 1s", plugin: log, params: {message: a}, group: db-heavy}
  - {name: b, schedule: "@every 1s", plugin: log, params: {message: b}}
`)
	_, _, changed := cfg.DiffJobs(bigger)
	require.Equal(t, []string{"a"}, changed, "a group's limit is part of its jobs' definitions")
	require.NotEqual(t, cfg.DefinitionsHash(), bigger.DefinitionsHash())
	require.Empty(t, cfg.RestartNeeded(bigger), "groups reload with the jobs")
	require.Equal(t, bigger.Groups, cfg.WithJobs(bigger).Groups)

	env := mustLoad(t, `groups: [{name: g, limit: 1}]
jobs:
  - {name: a, schedule: "@every 1s", plugin: log, params: {message: a}}
`, "SLOTLOCK_JOBS__a__GROUP=g")
	require.Equal(t, &scheduler.Group{Name: "g", Limit: 1}, env.JobSpecs()[0].Group)
}

// TestGroupErrors: an unknown group named by a job, limits out of range,
// bad and duplicate names: each error names the job where there is one,
// the key path and the file position.
func TestGroupErrors(t *testing.T) {
	lines := loadErrs(t, `groups:
  - name: db-heavy
    limit: 0
  - name: db-heavy
    limit: 2
  - name: Bad Name
    limit: 1
  - name: huge
    limit: 1000
jobs:
  - name: report
    schedule: "@daily"
    plugin: log
    params: {message: hi}
    group: nope
  - name: export
    schedule: "@daily"
    plugin: log
    params: {message: hi}
    group: db-heavy
`)
	require.Equal(t, []string{
		`groups[0].limit: must be between 1 and 100, got 0 (config.yaml:3:5)`,
		`groups[1].name "db-heavy": duplicate: groups[0] has the same name (config.yaml:4:5)`,
		`groups[2].name "Bad Name": ` + scheduler.CheckName("Bad Name").Error() + ` (config.yaml:6:5)`,
		`groups[3].limit: must be between 1 and 100, got 1000 (config.yaml:9:5)`,
		`jobs[0] "report": group "nope": not defined: no valid entry in groups (jobs[0].group, config.yaml:15:5)`,
	}, inFile(lines), "export names db-heavy, whose own errors say why")

	lines = loadErrs(t, `groups: [{name: a, limit: 1}, {name: b, limit: 2}]
jobs:
  - {name: report, schedule: "@daily", plugin: log, params: {message: hi}, group: c}
`)
	require.Equal(t, []string{
		`jobs[0] "report": group "c": not defined; groups: a, b (jobs[0].group, config.yaml:3:76)`,
	}, inFile(lines))

	lines = loadErrs(t, `jobs:
  - {name: report, schedule: "@daily", plugin: log, params: {message: hi}, group: nope}
`)
	require.Equal(t, []string{
		`jobs[0] "report": group "nope": not defined: no valid entry in groups (jobs[0].group, config.yaml:2:76)`,
	}, inFile(lines))
}

// inFile is lines with the temporary directory of config.yaml cut.
func inFile(lines []string) []string {
	dir := regexp.MustCompile(`/\S*/config\.yaml`)
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = dir.ReplaceAllString(l, "config.yaml")
	}
	return out
}
