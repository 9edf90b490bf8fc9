package cli

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/scheduler"
)

// The last-outcome gauges follow the newest outcome a replica learns of,
// whatever order it learns them in; the last success stays put when a
// later slot fails.
func TestJobOutcomeGauges(t *testing.T) {
	m := newMetrics()
	m.initJobs([]string{"j"})
	t1, t2 := time.Unix(1_000, 0), time.Unix(2_000, 0)
	outcome := func(o string) float64 { return testutil.ToFloat64(m.lastOutcome.WithLabelValues("j", o)) }
	success := func() float64 { return testutil.ToFloat64(m.lastSuccess.WithLabelValues("j")) }

	m.JobOutcome("j", scheduler.OutcomeSucceeded, t1)
	require.Equal(t, 1.0, outcome(scheduler.OutcomeSucceeded))
	require.Equal(t, 1000.0, success())

	m.JobOutcome("j", scheduler.OutcomeFailed, t2)
	require.Equal(t, 0.0, outcome(scheduler.OutcomeSucceeded))
	require.Equal(t, 1.0, outcome(scheduler.OutcomeFailed))
	require.Equal(t, 1000.0, success(), "a failure does not move the last success")

	m.JobOutcome("j", scheduler.OutcomeMissed, t1.Add(time.Second))
	require.Equal(t, 1.0, outcome(scheduler.OutcomeFailed), "an older slot's outcome, learned later, changes nothing")

	m.JobOutcome("j", scheduler.OutcomeSucceeded, t2.Add(time.Second))
	require.Equal(t, 1.0, outcome(scheduler.OutcomeSucceeded))
	require.Equal(t, 0.0, outcome(scheduler.OutcomeFailed))
	require.Equal(t, 2001.0, success())
}
