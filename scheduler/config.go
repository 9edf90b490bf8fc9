package scheduler

import (
	"errors"
	"log/slog"
	"os"
	"runtime"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// Metrics receives the scheduler's measurements. Every method must be cheap
// and safe for concurrent use. A nil Metrics in Config means none.
type Metrics interface {
	SlotSkipped(job string, reason history.Reason)                    // reason: one of history.SkipReasons
	RunFinished(job string, outcome history.Outcome, d time.Duration) // outcome: one of history.RunOutcomes
	StartDelay(job string, d time.Duration)                           // actual start - due time (the nominal slot plus its jitter offset; scheduled runs)
	LockAcquire(job string, d time.Duration, err error)               // latency of each Acquire, with its result
	LeaseLost(job string)                                             // a run lost its lease(s): once per run, like lock.lost
	RunAbandoned(job string)                                          // a run that never ended was reported (run.abandoned), once fleet-wide
	JobPaused(job string, paused bool)                                // whether the job was paused at its latest slot, as this replica saw it
	SlotMissed(job string, reason history.Reason)                     // a slot was declared missed (slot.missed), once fleet-wide; reason: one of history.MissedReasons
	// JobOutcome reports the latest slot outcome this replica knows of (a
	// run it ended, or the newest entry of the history the reconciler
	// read): outcome is a history outcome, at when the slot ended.
	JobOutcome(job string, outcome history.Outcome, at time.Time)
}

// Config configures a Scheduler. Locker (a locking.Locker, despite the
// field's name) and Jobs are required; the zero values of the rest mean
// the defaults shown.
type Config struct {
	// Replica is this replica's name in logs, heartbeats and history.
	// Default: the Locker's (locking.Options.Replica, which defaults to
	// the host name), so a service names its replica once; "replica"
	// when the Locker does not say.
	Replica string
	// Version and DefinitionsHash describe this replica in its heartbeat
	// (slotlock status): the build, and a hash of its job definitions
	// that differs between replicas running different jobs. Optional:
	// without DefinitionsHash the scheduler computes one from Jobs (what
	// each job declares, not its code: see Scheduler.DefinitionsHash).
	Version, DefinitionsHash string
	// Secrets are values that must never appear in an error text the
	// scheduler logs (the Redis password): they are scrubbed, with every
	// URL's credentials (jobs.Scrubber), from the run errors in
	// run.failed, run.retrying and run.canceled. Spans and history carry
	// the error class, never the text. Optional.
	Secrets []string
	// Locker is the lock stores: the slots' claims and the job leases
	// (locking.Locker) and the fleet's shared state beside them — pause
	// registers, history, records (locking.Store) — as redlock.New and
	// NewLocal return them. Required.
	Locker locking.Locker
	Clock  locking.Clock // default locking.SystemClock(0)
	// Logger receives the audit events. The scheduler does not add the
	// replica attribute to a logger it is given: give it one that carries
	// it (as the command does). Default: JSON lines on stderr at level
	// info, each with the replica attribute, as the contract's audit
	// events are.
	Logger *slog.Logger
	// Fit, when set, says whether this replica is fit to do its part:
	// while it returns an error, Healthy returns it too (the ops server's
	// /healthz answers 503 with it, for the orchestrator to restart the
	// replica). Give the Locker the same function (locking.Options.Fit)
	// so that an unfit replica also holds no lease. The command's says
	// whether its log output is blocked.
	Fit     func() error
	Metrics Metrics // nil: none
	// Notifier is told of each slot outcome this replica writes as the
	// writer of record, for the jobs with Notify rules (notify.go). nil:
	// no notifications.
	Notifier Notifier
	// TracerProvider, when set, gets a span per slot attempt and per run
	// (trace.go). Nil (the default) or a no-op provider: no tracing, at no
	// cost. The Locker takes its own (locking.Options.TracerProvider).
	TracerProvider trace.TracerProvider

	LockTTL       time.Duration // lease length, renewed at LockTTL/3 while a run goes on; default 30s
	MaxClockSkew  time.Duration // largest clock difference between replicas that exactly-once survives; default 2s
	ShutdownGrace time.Duration // running runs get this long to finish after Run's ctx ends, then are canceled and waited for up to 10s more; default 25s

	// Lateness is the bound after which a firing counts as late and goes to
	// the misfire policy. Default (and maximum) MaxClockSkew + 1s.
	Lateness time.Duration
	// Spread bounds the per-replica delay, derived from a hash of (job, slot,
	// replica), before a replica tries a slot while it has no view of the
	// fleet (every replica a candidate), so that replicas firing in the
	// same millisecond rarely split the lock nodes' votes and runs spread
	// over replicas. Default 5ms (0.5ms on average for the first of three
	// replicas); negative means no delay.
	Spread time.Duration
	// Candidates is how many replicas try each slot (k), chosen per slot
	// by rendezvous hashing over the replicas alive in the heartbeats that
	// run the same job definitions (slot_ranks.go): the first claims it at
	// its due time, the others SecondDelay apart after it, each once it
	// sees the slot not handled (one read on one lock store); the next two
	// in the slot's ranking, its fallbacks, check Fallback later; the
	// others do nothing for it. The lock stores' work per slot is thus one
	// claim and a few reads while the first candidate is well, and a
	// replica's per slot bounded, whatever their number. The choice only
	// moves work: exactly-once never depends on it. Default
	// DefaultCandidates (2); negative: every replica tries every slot at
	// its due time. Needs the heartbeat (Beat not negative).
	Candidates int
	// SecondDelay is how long after a slot's due time its second
	// candidate checks whether the first handled it (the r-th after the
	// first, r times as long; never later than the fallbacks): it bounds
	// the delay of a slot whose first candidate is gone, frozen or past
	// its capacity. Default DefaultSecondDelay (250ms), at most half of
	// Fallback; negative: the later candidates claim without a check,
	// Spread apart after the first (twice the claims per slot).
	SecondDelay time.Duration
	// Fallback is how long after a slot's due time its fallbacks check
	// it; it bounds the delay of a slot whose
	// candidates are all gone (dead, paused) but still in the view. It
	// must be less than the lateness bound. Default DefaultFallback
	// (750ms), at most half the lateness bound. Keep it off whole seconds
	// (DefaultFallback says why).
	Fallback time.Duration
	// MaxInFlight bounds the lock-store calls this replica has in flight at
	// once: Acquire and record calls, and separately half as many lease ends
	// (so ending a run never waits behind new acquisitions).
	// More wait in the scheduler, so that an overloaded replica sheds the
	// slots that turned late before asking the stores: a scheduled slot's
	// claim waits its turn as a queue entry, served in due order, and is
	// shed without a call once its answer is predicted after the slot
	// turns late (admission.go). The Redis nodes send
	// the calls in flight in pipelines (locking), so many in flight share
	// one round trip per node. Default 64 × GOMAXPROCS.
	MaxInFlight int

	// HistoryKeep is how many slot outcomes the lock stores keep per job
	// (history.ReadEntries). A slot that ends with a done marker — a run's
	// end, a skip for overlap or lateness that the winner marks, an
	// abandoned run settled — adds its outcome to the job's log in the same
	// script call, so the history costs no round trip; a slot skipped for a
	// pause gets its entry from the replicas that skipped it, and a slot
	// nobody ran, skipped or paused a missed entry from the reconciler
	// (reconciler.go): in the end every slot has one. Default DefaultHistoryKeep; negative keeps none.
	HistoryKeep int

	// Beat is how often the replica publishes its heartbeat in the lock
	// stores (version, definitions hash, runs going on: slotlock status,
	// and the reconciler's no_replica reason). Default DefaultBeat;
	// negative publishes none.
	Beat time.Duration
	// ReconcileEvery is how often the replicas elect one of them (through
	// a lease) to account for every slot of every job that is at least
	// ReconcileAfter old: a slot with no outcome in the history is declared
	// missed (slot.missed). Default DefaultReconcileEvery; negative turns
	// the reconciler off on this replica. ReconcileAfter is raised, per
	// job, to cover the lateness bound and misfire.deadline. Default
	// DefaultReconcileAfter.
	ReconcileEvery, ReconcileAfter time.Duration

	Jobs []JobSpec
}

// Defaults.
const (
	DefaultLockTTL       = 30 * time.Second
	DefaultMaxClockSkew  = 2 * time.Second
	DefaultShutdownGrace = 25 * time.Second
	DefaultSpread        = 5 * time.Millisecond
	// DefaultSecondDelay keeps a quarter second from the whole seconds that
	// slots fall on, as DefaultFallback does (it says why), and is long
	// enough for most runs of short jobs to have ended on a loaded fleet
	// (1,000 every-second jobs on three replicas of a 2-core host: start
	// delay p99 150–200 ms).
	DefaultSecondDelay = 250 * time.Millisecond
	DefaultBackoff     = 5 * time.Second
	DefaultDeadline    = 10 * time.Minute
	DefaultMisfireMax  = 10
	// DefaultBeat: a replica silent for three beats is not alive.
	DefaultBeat = history.DefaultBeat
	// DefaultHistoryKeep is how many slot outcomes the stores keep per job.
	DefaultHistoryKeep    = 1000
	DefaultReconcileEvery = 30 * time.Second
	DefaultReconcileAfter = time.Minute
)

// withDefaults checks c's own settings (its jobs are buildJobs') and
// fills in their defaults.
func (c *Config) withDefaults() (Config, error) {
	cfg := *c
	if err := errors.Join(cfg.settingsProblems()...); err != nil {
		return cfg, err
	}
	if cfg.Replica == "" {
		cfg.Replica = "replica"
		if n, ok := cfg.Locker.(interface{ Replica() string }); ok && n.Replica() != "" {
			cfg.Replica = n.Replica()
		}
	}
	if cfg.Clock == nil {
		cfg.Clock = locking.SystemClock(0)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("replica", cfg.Replica)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = nopMetrics{}
	}
	if cfg.LockTTL == 0 {
		cfg.LockTTL = DefaultLockTTL
	}
	if cfg.MaxClockSkew == 0 {
		cfg.MaxClockSkew = DefaultMaxClockSkew
	}
	if cfg.ShutdownGrace == 0 {
		cfg.ShutdownGrace = DefaultShutdownGrace
	}
	if cfg.Spread == 0 {
		cfg.Spread = DefaultSpread
	}
	if cfg.HistoryKeep == 0 {
		cfg.HistoryKeep = DefaultHistoryKeep
	}
	if cfg.Beat == 0 {
		cfg.Beat = DefaultBeat
	}
	if cfg.ReconcileEvery == 0 {
		cfg.ReconcileEvery = DefaultReconcileEvery
	}
	if cfg.ReconcileAfter <= 0 {
		cfg.ReconcileAfter = DefaultReconcileAfter
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 64 * runtime.GOMAXPROCS(0)
	}
	if cfg.Lateness == 0 {
		cfg.Lateness = cfg.MaxClockSkew + time.Second
	}
	if cfg.Candidates == 0 {
		cfg.Candidates = DefaultCandidates
	}
	if cfg.Fallback == 0 {
		cfg.Fallback = min(DefaultFallback, cfg.Lateness/2)
	}
	if cfg.SecondDelay == 0 {
		cfg.SecondDelay = min(DefaultSecondDelay, cfg.Fallback/2)
	}
	return cfg, nil
}

type nopMetrics struct{}

func (nopMetrics) SlotSkipped(string, history.Reason)                 {}
func (nopMetrics) RunFinished(string, history.Outcome, time.Duration) {}
func (nopMetrics) StartDelay(string, time.Duration)                   {}
func (nopMetrics) LockAcquire(string, time.Duration, error)           {}
func (nopMetrics) LeaseLost(string)                                   {}
func (nopMetrics) RunAbandoned(string)                                {}
func (nopMetrics) JobPaused(string, bool)                             {}
func (nopMetrics) SlotMissed(string, history.Reason)                  {}
func (nopMetrics) JobOutcome(string, history.Outcome, time.Time)      {}
