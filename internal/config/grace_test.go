package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/jobs"
)

// An exec kill_grace that would let the process outlive its lease is an
// error naming the job, the key path and the position; a default one is
// cut to fit a short lease.
func TestKillGraceWithinTheLease(t *testing.T) {
	job := "jobs:\n  - name: dump\n    schedule: '@every 1m'\n    plugin: exec\n    params:\n      command: [mysqldump]\n"
	lines := loadErrs(t, "lock: {ttl: 10s, max_clock_skew: 2s}\n"+job+"      kill_grace: 3s\n")
	require.True(t, containsLine(lines, `jobs[0] "dump": params.kill_grace: must be less than lock.ttl/2 - lock.max_clock_skew (10s/2 - 2s = 3s), got 3s`), "%v", lines)
	require.True(t, containsLine(lines, "(jobs[0].params.kill_grace, "), "%v", lines)
	require.True(t, containsLine(lines, "config.yaml:8:7)"), "the position of kill_grace: %v", lines)

	cfg := mustLoad(t, "lock: {ttl: 10s, max_clock_skew: 2s}\n"+job+"      kill_grace: 2900ms\n")
	g, set := cfg.Jobs[0].Runner.(jobs.Graceful).StopGrace()
	require.Equal(t, 2900*time.Millisecond, g)
	require.True(t, set)

	cfg = mustLoad(t, "lock: {ttl: 6s, max_clock_skew: 1s}\n"+job)
	g, set = cfg.Jobs[0].Runner.(jobs.Graceful).StopGrace()
	require.Equal(t, time.Second, g, "the 5s default is cut to half of ttl/2 - skew")
	require.False(t, set)
	g, _ = mustLoad(t, job).Jobs[0].Runner.(jobs.Graceful).StopGrace()
	require.Equal(t, 5*time.Second, g, "the default stays where it fits")
}
