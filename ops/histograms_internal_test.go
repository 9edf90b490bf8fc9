package ops

import (
	"errors"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/scheduler/history"
)

// TestJoblessHistograms: with MetricsOptions.JoblessHistograms the three
// histograms keep one series per outcome or result for all jobs, with
// every job's observations in it, and the counters keep their job label;
// by default each job has its own.
func TestJoblessHistograms(t *testing.T) {
	for _, tc := range []struct {
		opts MetricsOptions
		want []string // lines of the scrape
	}{
		{MetricsOptions{}, []string{
			`slotlock_start_delay_seconds_count{job="a"} 1`, `slotlock_start_delay_seconds_count{job="c"} 1`,
			`slotlock_run_duration_seconds_count{job="b",outcome="succeeded"} 1`,
			`slotlock_lock_acquire_seconds_count{job="a",result="acquired"} 1`, `slotlock_lock_acquire_seconds_count{job="a",result="error"} 1`,
			`slotlock_runs_total{job="a",outcome="succeeded"} 1`,
		}},
		{MetricsOptions{JoblessHistograms: true}, []string{
			`slotlock_start_delay_seconds_count 3`,
			`slotlock_run_duration_seconds_count{outcome="succeeded"} 3`,
			`slotlock_lock_acquire_seconds_count{result="acquired"} 3`, `slotlock_lock_acquire_seconds_count{result="error"} 1`,
			`slotlock_runs_total{job="a",outcome="succeeded"} 1`,
		}},
	} {
		m := NewMetricsWith(tc.opts)
		for _, job := range []string{"a", "b", "c"} {
			m.StartDelay(job, 10*time.Millisecond)
			m.RunFinished(job, history.OutcomeSucceeded, time.Second)
			m.LockAcquire(job, time.Millisecond, nil)
		}
		m.LockAcquire("a", time.Millisecond, errors.New("no quorum"))
		rec := httptest.NewRecorder()
		promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		scrape := rec.Body.String()
		for _, line := range tc.want {
			require.Regexp(t, "(?m)^"+regexp.QuoteMeta(line)+"$", scrape, "with %+v", tc.opts)
		}
		counts := regexp.MustCompile(`(?m)^slotlock_(start_delay|run_duration|lock_acquire)_seconds_count`).FindAllString(scrape, -1)
		want := 3 + 3 + 4 // a series per job (and per outcome or result)
		if tc.opts.JoblessHistograms {
			want = 1 + 1 + 2
		}
		require.Len(t, counts, want, "histogram series with %+v", tc.opts)
	}
}
