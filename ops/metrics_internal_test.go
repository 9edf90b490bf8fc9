package ops

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redistest"
	"github.com/slotlock/slotlock/locking/redlock"
	"github.com/slotlock/slotlock/scheduler"
	"github.com/slotlock/slotlock/scheduler/history"
)

// The last-outcome gauges follow the newest outcome a replica learns of,
// whatever order it learns them in; the last success stays put when a
// later slot fails.
func TestJobOutcomeGauges(t *testing.T) {
	m := NewMetrics()
	m.initJobs([]string{"j"})
	t1, t2 := time.Unix(1_000, 0), time.Unix(2_000, 0)
	outcome := func(o history.Outcome) float64 {
		return testutil.ToFloat64(m.lastOutcome.WithLabelValues("j", string(o)))
	}
	success := func() float64 { return testutil.ToFloat64(m.lastSuccess.WithLabelValues("j")) }

	m.JobOutcome("j", history.OutcomeSucceeded, t1)
	require.Equal(t, 1.0, outcome(history.OutcomeSucceeded))
	require.Equal(t, 1000.0, success())

	m.JobOutcome("j", history.OutcomeFailed, t2)
	require.Equal(t, 0.0, outcome(history.OutcomeSucceeded))
	require.Equal(t, 1.0, outcome(history.OutcomeFailed))
	require.Equal(t, 1000.0, success(), "a failure does not move the last success")

	m.JobOutcome("j", history.OutcomeMissed, t1.Add(time.Second))
	require.Equal(t, 1.0, outcome(history.OutcomeFailed), "an older slot's outcome, learned later, changes nothing")

	m.JobOutcome("j", history.OutcomeSucceeded, t2.Add(time.Second))
	require.Equal(t, 1.0, outcome(history.OutcomeSucceeded))
	require.Equal(t, 0.0, outcome(history.OutcomeFailed))
	require.Equal(t, 2001.0, success())
}

// slotlock_redis_node_up names a node by its index in redis.nodes, never
// by its address: /metrics is open to whoever reaches the ops port.
func TestNodeUpLabelledByIndex(t *testing.T) {
	m := NewMetrics()
	// Two "nodes" that hang up on every connection.
	addrs := []string{redistest.HangUp(t), redistest.HangUp(t)}
	l, err := redlock.New(redlock.Config{Nodes: addrs, OpTimeout: 50 * time.Millisecond},
		locking.Options{Replica: "r1"})
	require.NoError(t, err)
	defer l.Close()
	r := newReadiness(l, m, slog.New(slog.DiscardHandler), time.Second)
	r.check(context.Background())
	require.Equal(t, 2, testutil.CollectAndCount(m.nodeUp))
	require.Equal(t, 0.0, testutil.ToFloat64(m.nodeUp.WithLabelValues("1")))
	families, err := m.reg.Gather()
	require.NoError(t, err)
	var nodes []string
	for _, f := range families {
		if f.GetName() == "slotlock_redis_node_up" {
			for _, mt := range f.GetMetric() {
				for _, lp := range mt.GetLabel() {
					nodes = append(nodes, lp.GetName()+"="+lp.GetValue())
				}
			}
		}
	}
	require.ElementsMatch(t, []string{"node=0", "node=1"}, nodes, "no address in a label")
	for _, a := range addrs {
		require.NotContains(t, fmt.Sprint(families), a)
	}
}

// The group gauge is what the scheduler last reported for the group, and
// the skips counter has a group_full series from the start.
func TestGroupRunningGauge(t *testing.T) {
	m := NewMetrics()
	var _ scheduler.GroupMetrics = m
	m.initJobs([]string{"j"})
	require.Equal(t, 0.0, testutil.ToFloat64(m.skips.WithLabelValues("j", string(history.ReasonGroupFull))))
	m.GroupRunning("heavy", 2)
	m.GroupRunning("heavy", 1)
	require.Equal(t, 1.0, testutil.ToFloat64(m.groupRunning.WithLabelValues("heavy")))
}

// The gauges of the clock and node checks exist from their first
// reading: none with in-process locks, whose stores have neither.
func TestCheckGauges(t *testing.T) {
	m := NewMetrics()
	var _ scheduler.ClockMetrics = m
	var _ scheduler.NodeMetrics = m
	gathered := func(name string) int {
		families, err := m.reg.Gather()
		require.NoError(t, err)
		n := 0
		for _, f := range families {
			if f.GetName() == name {
				n += len(f.GetMetric())
			}
		}
		return n
	}
	require.Equal(t, 0, gathered("slotlock_clock_offset_seconds"), "no reading, no series")
	require.Equal(t, 0, gathered("slotlock_lock_nodes_dependent"), "no reading, no series")
	m.ClockOffset(1500 * time.Millisecond)
	m.ClockOffset(-250 * time.Millisecond)
	require.Equal(t, 1, gathered("slotlock_clock_offset_seconds"))
	require.Equal(t, -0.25, testutil.ToFloat64(m.clockOffset))
	m.NodesDependent(1)
	m.NodesDependent(0)
	require.Equal(t, 1, gathered("slotlock_lock_nodes_dependent"))
	require.Equal(t, 0.0, testutil.ToFloat64(m.dependent))
}

// The per-slot series, found once and kept, are the registry's: every
// event counts where a scrape reads it, and a series still appears only
// with its first event.
func TestPerSlotSeriesKept(t *testing.T) {
	m := NewMetrics()
	for range 2 {
		for _, j := range []string{"a", "b"} {
			m.RunFinished(j, history.OutcomeSucceeded, time.Second)
			m.StartDelay(j, time.Millisecond)
			m.LockAcquire(j, time.Millisecond, nil)
			m.SlotSkipped(j, history.ReasonHeld)
		}
	}
	m.RunFinished("a", history.OutcomeFailed, time.Second)
	for _, j := range []string{"a", "b"} {
		require.Equal(t, 2.0, testutil.ToFloat64(m.runs.WithLabelValues(j, "succeeded")), j)
		require.Equal(t, 2.0, testutil.ToFloat64(m.skips.WithLabelValues(j, "held")), j)
	}
	require.Equal(t, 1.0, testutil.ToFloat64(m.runs.WithLabelValues("a", "failed")))
	families, err := m.reg.Gather()
	require.NoError(t, err)
	samples := map[string]uint64{} // histogram series → observations
	for _, f := range families {
		for _, s := range f.GetMetric() {
			if h := s.GetHistogram(); h != nil {
				key := f.GetName()
				for _, l := range s.GetLabel() {
					key += "," + l.GetValue()
				}
				samples[key] = h.GetSampleCount()
			}
		}
	}
	require.Equal(t, map[string]uint64{
		"slotlock_run_duration_seconds,a,succeeded": 2, "slotlock_run_duration_seconds,b,succeeded": 2,
		"slotlock_run_duration_seconds,a,failed": 1,
		"slotlock_start_delay_seconds,a":         2, "slotlock_start_delay_seconds,b": 2,
		"slotlock_lock_acquire_seconds,a,acquired": 2, "slotlock_lock_acquire_seconds,b,acquired": 2,
	}, samples, "each event in its series, and no series without an event")
}
