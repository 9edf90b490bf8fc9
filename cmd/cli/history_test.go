package cli_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking/redistest"
)

// `slotlock history` reads the slot outcomes the replicas recorded in the
// lock stores: as a table and as JSON, filtered by outcome and time.
func TestHistoryCommand(t *testing.T) {
	t.Parallel()
	nodes := redistest.Start(t, 3)
	cfg := writeConfig(t, fleetYAML(nodes.Addrs())+`
jobs:
  - name: beat
    schedule: "* * * * * *"
    plugin: log
    params: {message: beat}
  - name: broken
    schedule: "* * * * * *"
    plugin: exec
    params: {command: ["/bin/false"]}
`)
	p := startReplica(t, cfg, "SLOTLOCK_REPLICA=r1")
	waitFor(t, 10*time.Second, "a few runs of each job", func() bool { return len(p.events("run.failed")) >= 3 })
	p.stop(t, 30*time.Second)

	out, errOut, code := slotlock(t, nil, "history", "--config", cfg, "--json", "beat")
	require.Equal(t, 0, code, errOut)
	var doc struct {
		Job     string `json:"job"`
		Entries []struct {
			Slot, Outcome, Replica, RunID string
			Token                         uint64 `json:"fencing_token"`
			Attempts                      int
			ErrorClass                    string `json:"error_class"`
		} `json:"entries"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	require.Equal(t, "beat", doc.Job)
	require.GreaterOrEqual(t, len(doc.Entries), 3)
	started := map[string]bool{}
	for _, e := range p.events("run.started") {
		if e["job"] == "beat" {
			started[e["slot"].(string)] = true
		}
	}
	for i, e := range doc.Entries {
		require.Equal(t, "succeeded", e.Outcome)
		require.Equal(t, "r1", e.Replica)
		require.True(t, started[e.Slot], "history slot %s has no run.started line", e.Slot)
		if i > 0 {
			require.Less(t, e.Slot, doc.Entries[i-1].Slot, "newest first")
		}
	}

	out, errOut, code = slotlock(t, nil, "history", "--config", cfg, "broken", "--outcome", "failed", "--limit", "2")
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, out)
	require.True(t, strings.HasPrefix(lines[0], "SLOT"), out)
	require.Contains(t, lines[1], "failed")
	require.Contains(t, lines[1], "error")
	require.NotContains(t, out, "exit status", "an error's text never reaches the history")

	out, _, code = slotlock(t, nil, "history", "--config", cfg, "--since", "2030-01-01T00:00:00Z", "--json", "beat")
	require.Equal(t, 0, code)
	require.Contains(t, out, `"entries": []`)

	_, _, code = slotlock(t, nil, "history", "--config", cfg, "nosuchjob")
	require.Equal(t, 2, code)
	_, _, code = slotlock(t, nil, "history", "--config", cfg, "--since", "yesterday", "beat")
	require.Equal(t, 2, code)
	for _, n := range nodes.Nodes() {
		_ = n.Kill()
	}
	_, _, code = slotlock(t, nil, "history", "--config", cfg, "beat")
	require.Equal(t, 1, code)
}
