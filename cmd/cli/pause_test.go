package cli_test

import (
	"encoding/json"
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
	cfg := writeConfig(t, fleetYAML(nodes.Addrs())+`
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
	// The pause is written when the command returns: no slot from the
	// next second up to its end runs. (Counting runs over a fixed sleep
	// from the command's return counted the first slot after the end
	// when the command itself took over a second on a loaded host.)
	until := pauseUntil(t, errOut)
	require.True(t, until.After(pausedAt) && !until.After(pausedAt.Add(4*time.Second)), "--for 4s ends 4 s after the pause was written: %v", until)
	time.Sleep(time.Until(until) + 500*time.Millisecond)
	ran := 0
	for _, p := range reps {
		for _, e := range p.events("run.started") {
			slot, err := time.Parse(time.RFC3339, e["slot"].(string))
			require.NoError(t, err)
			if slot.After(pausedAt) && !slot.After(until) {
				ran++
			}
		}
	}
	require.Zero(t, ran, "a replica ran the paused job")
	before := started()
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

// pauseUntil is the end of the pause the command's job.paused line names.
func pauseUntil(t *testing.T, out string) time.Time {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		var e map[string]any
		if json.Unmarshal([]byte(line), &e) != nil || e["event"] != "job.paused" {
			continue
		}
		until, err := time.Parse(time.RFC3339Nano, e["until"].(string))
		require.NoError(t, err)
		return until
	}
	t.Fatalf("no job.paused line in %q", out)
	return time.Time{}
}
