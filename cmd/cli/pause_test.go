package cli_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking/redistest"
)

// `slotlock pause --for` stops the job's runs on all three replicas from
// the next slot on and ends by itself; `pause` without --for holds until
// `resume`. Unknown jobs and in-process locks are configuration errors
// (exit 2); unreachable stores are a failure (exit 1).
func TestPauseAndResume(t *testing.T) {
	t.Parallel()
	nodes := redistest.Start(t, 3)
	cfg := writeConfig(t, redisNodesYAML(nodes.Addrs())+`
log: {format: json, level: info}
http: {addr: ""}
shutdown: {grace: 1s}
jobs:
  - name: beat
    schedule: "* * * * * *"
    plugin: log
    params: {message: beat}
`)
	var reps []*replicaProc
	for _, name := range []string{"r1", "r2", "r3"} {
		reps = append(reps, startReplica(t, cfg, "SLOTLOCK_REPLICA="+name))
	}
	started := func() int {
		n := 0
		for _, p := range reps {
			n += len(p.events("run.started"))
		}
		return n
	}
	waitFor(t, 10*time.Second, "runs", func() bool { return started() >= 2 })

	_, errOut, code := slotlock(t, []string{"SLOTLOCK_REPLICA=ops"}, "pause", "--config", cfg, "--for", "4s", "--reason", "deploy", "beat")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, `"event":"job.paused"`)
	require.Contains(t, errOut, `"by":"ops"`)
	require.Contains(t, errOut, `"reason":"deploy"`)
	require.Contains(t, errOut, `"until":"`)
	pausedAt := time.Now()

	time.Sleep(1500 * time.Millisecond) // the next slot is skipped everywhere
	before := started()
	time.Sleep(1500 * time.Millisecond)
	require.Equal(t, before, started(), "a replica ran the paused job")
	for _, p := range reps {
		waitFor(t, 3*time.Second, "a paused skip on every replica", func() bool {
			for _, e := range p.events("slot.skipped") {
				if e["reason"] == "paused" && e["pause_reason"] == "deploy" && e["by"] == "ops" {
					return true
				}
			}
			return false
		})
	}
	waitFor(t, 5*time.Second, "runs after the pause ended by itself", func() bool { return started() > before })
	require.Greater(t, time.Since(pausedAt), 3*time.Second)

	_, errOut, code = slotlock(t, []string{"SLOTLOCK_REPLICA=ops"}, "pause", "--config", cfg, "beat")
	require.Equal(t, 0, code, errOut)
	require.NotContains(t, errOut, `"until"`, "a pause without --for has no end")
	time.Sleep(1500 * time.Millisecond)
	before = started()
	time.Sleep(2 * time.Second)
	require.Equal(t, before, started(), "ran while paused until resumed")
	_, errOut, code = slotlock(t, []string{"SLOTLOCK_REPLICA=ops"}, "resume", "--config", cfg, "beat")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, `"event":"job.resumed"`)
	waitFor(t, 5*time.Second, "runs after resume", func() bool { return started() > before })
	for _, p := range reps {
		p.stop(t, 30*time.Second)
	}

	_, errOut, code = slotlock(t, nil, "pause", "--config", cfg, "nosuchjob")
	require.Equal(t, 2, code, errOut)
	local := writeConfig(t, "http: {addr: \"\"}\njobs:\n  - {name: beat, schedule: \"@daily\", plugin: log, params: {message: x}}\n")
	_, errOut, code = slotlock(t, nil, "resume", "--config", local, "beat")
	require.Equal(t, 2, code, errOut)
	require.True(t, strings.Contains(errOut, "redis.nodes"), errOut)
	for _, n := range nodes.Nodes() {
		_ = n.Kill()
	}
	_, errOut, code = slotlock(t, nil, "pause", "--config", cfg, "beat")
	require.Equal(t, 1, code, errOut)
}
