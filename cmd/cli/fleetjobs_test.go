package cli_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redistest"
	"github.com/slotlock/slotlock/locking/redlock"
	"github.com/slotlock/slotlock/scheduler"
	"github.com/slotlock/slotlock/scheduler/history"
)

// A fleet of services that embed the scheduler runs a job no
// configuration file declares: with only the Redis connection in its
// configuration, the command lists its history and status, pauses and
// resumes it, and refuses to backfill it (the body lives in the
// services). A configuration that declares it otherwise is warned about.
func TestCommandOnEmbeddedFleet(t *testing.T) {
	t.Parallel()
	nodes := redistest.Start(t, 3)
	quiet := slog.New(slog.DiscardHandler)
	lk, err := redlock.New(redlock.Config{Nodes: nodes.Addrs()}, locking.Options{Replica: "svc-1", Logger: quiet})
	require.NoError(t, err)
	defer lk.Close()
	var runs atomic.Int32
	s, err := scheduler.New(scheduler.Config{Locker: lk, Logger: quiet, Jobs: []scheduler.JobSpec{{
		Name: "tick", Spec: "@every 1s", Overlap: scheduler.OverlapAllow,
		Job: jobs.Func(func(context.Context, jobs.Run) error { runs.Add(1); return nil }),
	}}})
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		stop()
		require.NoError(t, <-done)
	}()
	waitFor(t, 10*time.Second, "two runs", func() bool { return runs.Load() >= 2 })

	// op_timeout above its default: what the fleet publishes is the
	// subject, not a loaded host's slow replies.
	cfg := writeConfig(t, redisNodesYAML(nodes.Addrs())+"  op_timeout: 500ms\n")
	out, errOut, code := slotlock(t, nil, "history", "--config", cfg, "--json", "tick")
	require.Equal(t, 0, code, errOut)
	var doc struct {
		Job     string
		Entries []history.Entry
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	require.Equal(t, "tick", doc.Job)
	require.NotEmpty(t, doc.Entries, out)
	require.Equal(t, history.OutcomeSucceeded, doc.Entries[0].Outcome, out)
	require.Equal(t, "svc-1", doc.Entries[0].Replica, out)

	out, errOut, code = slotlock(t, nil, "status", "--config", cfg, "--json")
	require.Equal(t, 0, code, errOut)
	var st history.Status
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	require.Len(t, st.Jobs, 1, out)
	require.Equal(t, "tick", st.Jobs[0].Job)
	require.Equal(t, "@every 1s", st.Jobs[0].Schedule)
	require.NotEmpty(t, st.Jobs[0].NextSlot, "the published schedule lists the next slot")
	require.Len(t, st.Replicas, 1, out)
	require.Equal(t, "svc-1", st.Replicas[0].Replica)
	require.False(t, st.Replicas[0].Differs, "no definitions loaded: nothing to differ from")
	out, errOut, code = slotlock(t, nil, "status", "--config", cfg, "tick")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "tick")

	// No file at all: the Redis nodes from the environment are all the
	// command needs.
	nodesEnv := []string{"SLOTLOCK_REDIS__NODES=" + strings.Join(nodes.Addrs(), ","), "SLOTLOCK_REDIS__OP_TIMEOUT=500ms"}
	out, errOut, code = slotlockIn(t, t.TempDir(), nodesEnv, "history", "--json", "tick")
	require.Equal(t, 0, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	require.NotEmpty(t, doc.Entries, out)
	require.Equal(t, "svc-1", doc.Entries[0].Replica, out)
	out, errOut, code = slotlockIn(t, t.TempDir(), nodesEnv, "status", "--json")
	require.Equal(t, 0, code, errOut)
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	require.Len(t, st.Jobs, 1, out)
	require.Equal(t, "@every 1s", st.Jobs[0].Schedule)

	_, errOut, code = slotlock(t, nil, "pause", "--config", cfg, "--reason", "maintenance", "tick")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, `"event":"job.paused"`)
	out, _, _ = slotlock(t, nil, "status", "--config", cfg, "--json", "tick")
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	require.NotNil(t, st.Jobs[0].Pause, "status shows the pause")
	require.Equal(t, "maintenance", st.Jobs[0].Pause.Reason)
	_, errOut, code = slotlock(t, nil, "resume", "--config", cfg, "tick")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, `"event":"job.resumed"`)

	from := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	to := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	_, errOut, code = slotlock(t, nil, "backfill", "--config", cfg, "--from", from, "--to", to, "tick")
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, `job "tick" is run by the fleet but not defined in this configuration`)
	require.Contains(t, errOut, "needs the job's definition")

	_, errOut, code = slotlock(t, nil, "history", "--config", cfg, "nosuchjob")
	require.Equal(t, 2, code, errOut)
	require.Contains(t, errOut, `no job named "nosuchjob" in the configuration or among the jobs the fleet publishes`)

	// The configuration declares the job with another schedule and zone:
	// its definition is used, and the difference named.
	other := writeConfig(t, redisNodesYAML(nodes.Addrs())+"  op_timeout: 500ms\n"+`jobs:
  - name: tick
    schedule: "@every 2s"
    timezone: Europe/Paris
    plugin: log
    overlap: allow
    params: {message: tick}
`)
	_, errOut, code = slotlock(t, nil, "history", "--config", other, "tick")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, `slotlock history: warning: job "tick": the configuration's definition differs from the one the fleet publishes: `+
		`schedule "@every 2s" in the configuration, "@every 1s" on the fleet; timezone "Europe/Paris" in the configuration, "UTC" on the fleet; `+
		`using the configuration's`+"\n")
	require.Equal(t, 1, strings.Count(errOut, "warning"), "one line: %s", errOut)
	require.False(t, strings.Contains(errOut, "overlap"), errOut)
}
