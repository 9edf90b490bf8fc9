package cli_test

import (
	"encoding/json"
	"os"
	"os/user"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking/redistest"
	"github.com/slotlock/slotlock/scheduler"
	"github.com/slotlock/slotlock/scheduler/history"
)

// trigger, pause, resume and backfill write who (OS user, host, replica
// name), what and when to the fleet log; `status` and `history` show it,
// and a manual run's entry carries its outcome like a slot's history entry.
func TestControlAudit(t *testing.T) {
	t.Parallel()
	nodes := redistest.Start(t, 3)
	cfg := writeConfig(t, redisNodesYAML(nodes.Addrs())+`
log: {format: json, level: info}
http: {addr: ""}
jobs:
  - name: beat
    schedule: "@every 1h"
    plugin: log
    params: {message: beat}
`)
	ops := []string{"SLOTLOCK_REPLICA=ops-1"}
	for _, args := range [][]string{
		{"trigger", "--config", cfg, "beat"},
		{"pause", "--config", cfg, "--reason", "maintenance", "beat"},
		{"resume", "--config", cfg, "beat"},
		{"backfill", "--config", cfg, "--from", "2026-01-01T00:00:00Z", "--to", "2026-01-01T01:00:00Z", "beat"},
	} {
		_, errOut, code := slotlock(t, ops, args...)
		require.Contains(t, []int{0, 1}, code, "%v: %s", args, errOut)
		if args[0] != "backfill" {
			require.Contains(t, errOut, `"event":"control.recorded"`, args)
		}
	}
	me, err := user.Current()
	require.NoError(t, err)
	host, _ := os.Hostname()

	out, errOut, code := slotlock(t, ops, "status", "--json", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	var st history.Status
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	actions := map[string]history.Control{}
	for _, c := range st.Controls {
		require.Equal(t, "beat", c.Job)
		require.Equal(t, me.Username, c.User)
		require.Equal(t, host, c.Host)
		require.Equal(t, "ops-1", c.Replica)
		require.False(t, c.At.IsZero())
		if _, seen := actions[c.Action]; !seen {
			actions[c.Action] = c // newest first
		}
	}
	require.Contains(t, actions, history.ControlPause)
	require.Equal(t, "maintenance", actions[history.ControlPause].Detail)
	require.Contains(t, actions, history.ControlResume)
	require.Contains(t, actions, history.ControlBackfill)
	require.Contains(t, actions[history.ControlBackfill].Detail, "2026-01-01T00:00:00Z to 2026-01-01T01:00:00Z",
		"the backfill's window")
	trig := actions[history.ControlTrigger]
	require.NotNil(t, trig.Run, "the manual run's history entry")
	require.Equal(t, history.OutcomeSucceeded, trig.Run.Outcome)
	require.Equal(t, scheduler.SlotManual, trig.Run.Slot)
	require.NotZero(t, trig.Run.Token)

	out, errOut, code = slotlock(t, ops, "history", "--config", cfg, "beat")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "CONTROL")
	require.Contains(t, out, "pause")
	require.Contains(t, out, me.Username+"@"+host+" (ops-1)")
}
