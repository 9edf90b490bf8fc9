package ops

import (
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// Metrics exports the scheduler's measurements and the lock stores' state
// in the Prometheus text format, from a registry of its own: the
// slotlock_* series of the contract and the Go runtime's. It implements
// scheduler.Metrics: give it to the scheduler as Config.Metrics, and the
// Handler of that scheduler serves it at /metrics. Every method is safe
// for concurrent use.
type Metrics struct {
	reg          *prometheus.Registry
	series       seriesCache // the per-slot series, found once (series.go)
	jobless      bool        // MetricsOptions.JoblessHistograms
	mu           sync.Mutex
	latest       map[string]latestOutcome // JobOutcome's state, by job
	runs         *prometheus.CounterVec
	skips        *prometheus.CounterVec
	startDelay   *prometheus.HistogramVec
	runDuration  *prometheus.HistogramVec
	lockAcquire  *prometheus.HistogramVec
	leasesLost   *prometheus.CounterVec
	abandoned    *prometheus.CounterVec
	paused       *prometheus.GaugeVec
	missed       *prometheus.CounterVec
	notified     *prometheus.CounterVec
	lastSuccess  *prometheus.GaugeVec
	lastOutcome  *prometheus.GaugeVec
	configInfo   *prometheus.GaugeVec
	nodeUp       *prometheus.GaugeVec
	ready        prometheus.Gauge
	schedulerRun prometheus.Gauge
	groupRunning *prometheus.GaugeVec
	clockOffset  prometheus.Gauge // registered at the first reading (ClockOffset)
	clockOnce    sync.Once
	dependent    prometheus.Gauge // registered at the first reading (NodesDependent)
	nodesOnce    sync.Once
}

// MetricsOptions configures NewMetricsWith; the zero value is
// NewMetrics's.
type MetricsOptions struct {
	// JoblessHistograms leaves the job label off the histograms
	// (slotlock_start_delay_seconds, slotlock_run_duration_seconds,
	// slotlock_lock_acquire_seconds): one series per outcome or result
	// for all jobs instead of one per job. A job's histograms are about
	// forty series; with thousands of jobs they are most of a scrape.
	JoblessHistograms bool
}

// NewMetrics returns a Metrics with every series at zero.
func NewMetrics() *Metrics { return NewMetricsWith(MetricsOptions{}) }

// NewMetricsWith is NewMetrics configured by o.
func NewMetricsWith(o MetricsOptions) *Metrics {
	job := []string{"job"}
	if o.JoblessHistograms {
		job = nil
	}
	m := &Metrics{
		reg:     prometheus.NewRegistry(),
		latest:  map[string]latestOutcome{},
		jobless: o.JoblessHistograms,
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "slotlock_runs_total", Help: "Runs that ended on this replica, by job and outcome (succeeded, failed, canceled).",
		}, []string{"job", "outcome"}),
		skips: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "slotlock_slots_skipped_total", Help: "Slots this replica did not run, by job and reason (held, done, overlap, late, no_quorum, group_full, ...).",
		}, []string{"job", "reason"}),
		startDelay: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "slotlock_start_delay_seconds",
			Help:    "Actual start of a run minus its slot's nominal time.",
			Buckets: []float64{.001, .0025, .005, .01, .015, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, job),
		runDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "slotlock_run_duration_seconds",
			Help:    "Duration of runs, by job and outcome.",
			Buckets: prometheus.ExponentialBuckets(0.005, 4, 10),
		}, append(job, "outcome")),
		lockAcquire: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "slotlock_lock_acquire_seconds",
			Help:    "Latency of lock acquisitions, by job and result (acquired, not_acquired, error).",
			Buckets: []float64{.0005, .001, .002, .005, .01, .025, .05, .1, .25, .5, 1},
		}, append(job, "result")),
		leasesLost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "slotlock_leases_lost_total", Help: "Leases the watchdog could not renew before they expired, by job.",
		}, []string{"job"}),
		abandoned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "slotlock_runs_abandoned_total", Help: "Runs that started and never ended (their replica died or froze past its lease), reported by this replica (run.abandoned), by job.",
		}, []string{"job"}),
		paused: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "slotlock_job_paused", Help: "1 while the job is paused (slotlock pause), as this replica saw it at the job's latest slot.",
		}, []string{"job"}),
		missed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "slotlock_slots_missed_total", Help: "Slots that should have run and have no outcome (slot.missed), by job and reason (no_replica, no_quorum, unknown); counted once fleet-wide, by the replica that reconciled them.",
		}, []string{"job", "reason"}),
		notified: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "slotlock_notifications_total", Help: "Notifications this replica delivered (sent) or gave up on after its retries (failed), by notify target; each event is sent by one replica fleet-wide, so sum over replicas.",
		}, []string{"to", "result"}),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "slotlock_job_last_success_timestamp_seconds", Help: "When the job's latest successful slot this replica knows of ended (its own runs and the history it reconciled), Unix seconds; take max over replicas.",
		}, []string{"job"}),
		lastOutcome: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "slotlock_job_last_outcome", Help: "1 for the outcome of the job's latest slot this replica knows of (succeeded, failed, canceled, abandoned, skipped, missed), 0 for the others.",
		}, []string{"job", "outcome"}),
		configInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "slotlock_config_info", Help: "1, labelled with the hash of this replica's job definitions (as in its heartbeat and `slotlock status`).",
		}, []string{"hash"}),
		nodeUp: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "slotlock_redis_node_up", Help: "1 when the Redis node answered the last PING within op_timeout; node is its index in redis.nodes.",
		}, []string{"node"}),
		ready: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "slotlock_ready", Help: "1 when a majority of lock stores is reachable (always 1 with local locks).",
		}),
		schedulerRun: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "slotlock_scheduler_running", Help: "1 while the scheduler loop runs and ticks (/healthz is 200); 0 before it starts, once it stops firing at shutdown, or stuck.",
		}),
		clockOffset: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "slotlock_clock_offset_seconds", Help: "This replica's clock minus the median of the lock nodes' clocks at the latest clock check (every 30 s; absent with in-process locks). Beyond half of lock.max_clock_skew, replicas may differ by more than it: slots run early or late.",
		}),
		dependent: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "slotlock_lock_nodes_dependent", Help: "Lock nodes that add no independent writable store at the latest node check (every minute; absent with in-process locks): a second entry of one server or of one replicated dataset, or a read-only replica. Above 0 the quorum counts a server twice, or a node that refuses every write: fewer faults take it.",
		}),
		groupRunning: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "slotlock_group_running", Help: "Runs of the concurrency group's jobs going on on this replica (permits held here); sum over replicas for the fleet's, at most the group's limit.",
		}, []string{"group"}),
	}
	m.reg.MustRegister(m.groupRunning, m.runs, m.skips, m.startDelay, m.runDuration, m.lockAcquire, m.leasesLost, m.abandoned, m.paused,
		m.missed, m.notified, m.lastSuccess, m.lastOutcome, m.configInfo,
		m.nodeUp, m.ready, m.schedulerRun,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// ClockOffset implements scheduler.ClockMetrics:
// slotlock_clock_offset_seconds, from the first reading on.
func (m *Metrics) ClockOffset(offset time.Duration) {
	m.clockOnce.Do(func() { m.reg.MustRegister(m.clockOffset) })
	m.clockOffset.Set(offset.Seconds())
}

// NodesDependent implements scheduler.NodeMetrics:
// slotlock_lock_nodes_dependent, from the first reading on.
func (m *Metrics) NodesDependent(n int) {
	m.nodesOnce.Do(func() { m.reg.MustRegister(m.dependent) })
	m.dependent.Set(float64(n))
}

// GroupRunning implements scheduler.GroupMetrics.
func (m *Metrics) GroupRunning(group string, running int) {
	m.groupRunning.WithLabelValues(group).Set(float64(running))
}

func (m *Metrics) SlotSkipped(job string, reason history.Reason) {
	m.series.counter(m.skips, job, string(reason)).Inc()
}

func (m *Metrics) RunFinished(job string, outcome history.Outcome, d time.Duration) {
	m.series.counter(m.runs, job, string(outcome)).Inc()
	m.series.observer(m.runDuration, m.histJob(job), string(outcome)).Observe(d.Seconds())
}

func (m *Metrics) StartDelay(job string, d time.Duration) {
	m.series.observer(m.startDelay, m.histJob(job), "").Observe(d.Seconds())
}

func (m *Metrics) LockAcquire(job string, d time.Duration, err error) {
	m.series.observer(m.lockAcquire, m.histJob(job), acquireResult(err)).Observe(d.Seconds())
}

// histJob is a histogram's job label value: none when they have none.
func (m *Metrics) histJob(job string) string {
	if m.jobless {
		return ""
	}
	return job
}

func (m *Metrics) LeaseLost(job string) { m.leasesLost.WithLabelValues(job).Inc() }

func (m *Metrics) RunAbandoned(job string) { m.abandoned.WithLabelValues(job).Inc() }

func (m *Metrics) JobPaused(job string, paused bool) {
	v := 0.0
	if paused {
		v = 1
	}
	m.paused.WithLabelValues(job).Set(v)
}

func (m *Metrics) SlotMissed(job string, reason history.Reason) {
	m.missed.WithLabelValues(job, string(reason)).Inc()
}

// InitNotifications creates the series of each notify target at zero,
// so that an alert on failed notifications sees them before the first.
func (m *Metrics) InitNotifications(targets []string) {
	for _, t := range targets {
		m.notified.WithLabelValues(t, "sent")
		m.notified.WithLabelValues(t, "failed")
	}
}

// Notification counts one notification's result (notify.Metrics):
// slotlock_notifications_total{to,result}.
func (m *Metrics) Notification(to, result string) {
	m.notified.WithLabelValues(to, result).Inc()
}

func (m *Metrics) JobOutcome(job string, outcome history.Outcome, at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	last := m.latest[job]
	if at.Before(last.at) {
		return // an older slot's outcome, read after a newer one
	}
	if last.outcome != outcome {
		// Called for every run: touch the outcome series only on a change.
		for _, o := range history.Outcomes {
			m.lastOutcome.WithLabelValues(job, string(o)).Set(b2f(o == outcome))
		}
	}
	if outcome == history.OutcomeSucceeded {
		if last.success == nil {
			last.success = m.lastSuccess.WithLabelValues(job)
		}
		last.success.Set(float64(at.UnixMilli()) / 1000)
	}
	last.at, last.outcome = at, outcome
	m.latest[job] = last
}

// latestOutcome is what JobOutcome last exported for a job.
type latestOutcome struct {
	at      time.Time
	outcome history.Outcome
	success prometheus.Gauge // the job's slotlock_job_last_success_timestamp_seconds
}

// setConfigHash exports the job definitions' hash (slotlock_config_info).
func (m *Metrics) setConfigHash(hash string) {
	m.configInfo.Reset()
	m.configInfo.WithLabelValues(hash).Set(1)
}

// initJobs creates each job's series at zero, so dashboards and alerts see
// them before the first event.
func (m *Metrics) initJobs(names []string) {
	for _, j := range names {
		for _, o := range history.RunOutcomes {
			m.runs.WithLabelValues(j, string(o))
		}
		for _, r := range history.SkipReasons {
			m.skips.WithLabelValues(j, string(r))
		}
		m.leasesLost.WithLabelValues(j)
		m.abandoned.WithLabelValues(j)
		m.paused.WithLabelValues(j)
		for _, r := range history.MissedReasons {
			m.missed.WithLabelValues(j, string(r))
		}
		m.lastSuccess.WithLabelValues(j)
	}
}

func acquireResult(err error) string {
	switch {
	case err == nil:
		return "acquired"
	case errors.Is(err, locking.ErrNotAcquired):
		return "not_acquired"
	default:
		return "error"
	}
}
