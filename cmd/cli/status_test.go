package cli_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking/redistest"
)

// `slotlock status` shows each job's next slot, pause, last outcome and
// run going on, and the replicas alive with their definitions' hash —
// flagged when it differs from the configuration status loaded.
func TestStatusCommand(t *testing.T) {
	t.Parallel()
	nodes := redistest.Start(t, 3)
	jobsYAML := `
jobs:
  - name: beat
    schedule: "* * * * * *"
    plugin: log
    params: {message: beat}
  - name: slow
    schedule: "*/2 * * * * *"
    timezone: Europe/Paris
    plugin: exec
    params: {command: ["sleep", "30"]}
    timeout: 40s
`
	base := fleetYAML(nodes.Addrs())
	cfg := writeConfig(t, base+jobsYAML)
	p := startReplica(t, cfg, "SLOTLOCK_REPLICA=r1")
	waitFor(t, 15*time.Second, "slow running and beat done", func() bool {
		return len(p.events("run.succeeded")) >= 2 && len(p.events("run.started")) >= 3
	})
	_, errOut, code := slotlock(t, nil, "pause", "--config", cfg, "--for", "1h", "--reason", "maintenance", "beat")
	require.Equal(t, 0, code, errOut)
	time.Sleep(11 * time.Second) // a heartbeat listing the slow run (one every 10s)

	out, errOut, code := slotlock(t, nil, "status", "--config", cfg, "--json")
	require.Equal(t, 0, code, errOut)
	var st struct {
		Hash string `json:"definitions_hash"`
		Jobs []struct {
			Job, Schedule, Timezone string
			NextSlot                string `json:"next_slot"`
			NextSlotUTC             string `json:"next_slot_utc"`
			Pause                   *struct {
				Until      *time.Time
				By, Reason string
			}
			Last    *struct{ Slot, Outcome, Replica string } `json:"last_outcome"`
			Running []struct {
				Slot, Replica string
				RunID         string `json:"run_id"`
				Token         uint64 `json:"fencing_token"`
				Since         time.Time
			}
		}
		Replicas []struct {
			Replica, Version, Instance string
			Hash                       string `json:"definitions_hash"`
			Differs                    bool
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	require.Len(t, st.Jobs, 2, out)
	beat, slow := st.Jobs[0], st.Jobs[1]
	require.Equal(t, "beat", beat.Job)
	require.NotNil(t, beat.Pause, out)
	require.Equal(t, "maintenance", beat.Pause.Reason)
	require.NotNil(t, beat.Pause.Until)
	require.WithinDuration(t, time.Now().Add(time.Hour), *beat.Pause.Until, time.Minute)
	require.NotNil(t, beat.Last, out)
	require.Contains(t, []string{"succeeded", "skipped"}, beat.Last.Outcome)

	require.Equal(t, "Europe/Paris", slow.Timezone)
	next, err := time.Parse(time.RFC3339, slow.NextSlot)
	require.NoError(t, err)
	nextUTC, err := time.Parse(time.RFC3339, slow.NextSlotUTC)
	require.NoError(t, err)
	require.True(t, next.Equal(nextUTC))
	require.NotEqual(t, slow.NextSlot, slow.NextSlotUTC, "the job's zone and UTC")
	require.Nil(t, slow.Pause)
	require.NotEmpty(t, slow.Running, out)
	run := slow.Running[0]
	require.Equal(t, "r1", run.Replica)
	require.NotZero(t, run.Token)
	started := p.events("run.started")
	found := false
	for _, e := range started {
		if e["job"] == "slow" && e["run_id"] == run.RunID && e["slot"] == run.Slot {
			found = true
		}
	}
	require.True(t, found, "running run %+v has no run.started line", run)

	require.Len(t, st.Replicas, 1, out)
	require.Equal(t, "r1", st.Replicas[0].Replica)
	require.Equal(t, st.Hash, st.Replicas[0].Hash)
	require.False(t, st.Replicas[0].Differs)
	require.NotEmpty(t, st.Replicas[0].Version)

	// A configuration with other definitions flags the replica.
	other := writeConfig(t, base+strings.Replace(jobsYAML, "message: beat", "message: changed", 1))
	out, errOut, code = slotlock(t, nil, "status", "--config", other, "slow")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "JOB")
	require.Contains(t, out, "slow")
	require.NotContains(t, out, "beat")
	require.Contains(t, out, "REPLICA")
	require.Contains(t, out, "r1")
	require.Contains(t, out, "(differs from ")
	require.Contains(t, out, "on r1 (run "+run.RunID)

	_, _, code = slotlock(t, nil, "status", "--config", cfg, "nosuchjob")
	require.Equal(t, 2, code)
	p.stop(t, 30*time.Second)
}

// Each replica's heartbeat carries its clock against the Redis nodes'
// (its clock check's latest reading): `slotlock status` shows it, and says
// when two replicas are further apart than lock.max_clock_skew. r2 runs
// 2.5 s ahead (SLOTLOCK_CLOCK_OFFSET), beyond the default 2 s.
func TestStatusClocks(t *testing.T) {
	t.Parallel()
	nodes := redistest.Start(t, 3)
	cfg := writeConfig(t, fleetYAML(nodes.Addrs())+`
jobs:
  - name: hourly
    schedule: "@hourly"
    plugin: log
    params: {message: hourly}
`)
	r1 := startReplica(t, cfg, "SLOTLOCK_REPLICA=r1")
	r2 := startReplica(t, cfg, "SLOTLOCK_REPLICA=r2", "SLOTLOCK_CLOCK_OFFSET=2500ms")
	waitFor(t, 15*time.Second, "r2's clock.off", func() bool { return len(r2.events("clock.off")) == 1 })
	require.Empty(t, r1.events("clock.off"), "r1's clock is right")
	time.Sleep(11 * time.Second) // a heartbeat after the first reading (one every 10s)

	out, errOut, code := slotlock(t, nil, "status", "--config", cfg, "--json")
	require.Equal(t, 0, code, errOut)
	var st struct {
		Replicas []struct {
			Replica string
			Clock   *int64 `json:"clock_offset_ms"`
		}
	}
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	require.Len(t, st.Replicas, 2, out)
	clocks := map[string]int64{}
	for _, r := range st.Replicas {
		require.NotNil(t, r.Clock, out)
		clocks[r.Replica] = *r.Clock
	}
	require.InDelta(t, 0, clocks["r1"], 50, out)
	require.InDelta(t, 2500, clocks["r2"], 50, out)

	out, errOut, code = slotlock(t, nil, "status", "--config", cfg)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "CLOCK")
	require.Regexp(t, `r2 .* \+2\.[45]\d\ds\n`, out)
	require.Regexp(t, `clocks: r2 is 2\.[45]\d*s ahead of r1, more than lock\.max_clock_skew \(2s\)`, out)
	r1.stop(t, 30*time.Second)
	r2.stop(t, 30*time.Second)
}
