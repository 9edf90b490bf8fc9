package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/slotlock/slotlock/internal/config"
	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redlock"
	"github.com/slotlock/slotlock/ops"
	"github.com/slotlock/slotlock/scheduler"
	"github.com/slotlock/slotlock/scheduler/notify"
)

// replica is everything one `slotlock run` or `slotlock trigger` builds
// from a valid configuration.
type replica struct {
	cfg    *config.Config
	name   string
	log    *slog.Logger
	clock  locking.Clock
	locker locking.Locker
	redis  *redlock.Config // the Redis nodes' settings; nil in local mode
	sched  *scheduler.Scheduler
	// notifier sends the jobs' notifications (nil: no notify targets);
	// its sweeper runs beside the scheduler in `slotlock run`.
	notifier *notify.Notifier
	closers  []func()
}

func (r *replica) close() {
	for i := len(r.closers) - 1; i >= 0; i-- {
		r.closers[i]()
	}
}

// loadConfig loads path and prints every error, one per line, to stderr.
func loadConfig(path string, env cmdEnv) (*config.Config, bool) {
	cfg, _, ok := loadRunConfig(path, env)
	return cfg, ok
}

// errEmptyConfig refuses a configuration file that holds no setting, at
// start as on reload: on reload such a file is most often one caught
// between its truncation and its new contents, and taking it would remove
// every job; at start it would run a replica with no job on the defaults
// (the ops server on every interface). One rule for both.
var errEmptyConfig = errors.New("the configuration file is empty (no setting, only blanks or comments): " +
	"write at least one section (jobs:, redis:, ...); slotlock refuses an empty file at start and on reload")

func printErrors(env cmdEnv, err error) {
	if errs, ok := err.(config.Errors); ok {
		for _, e := range errs {
			fmt.Fprintln(env.Stderr, e)
		}
		return
	}
	fmt.Fprintln(env.Stderr, err)
}

// build assembles logger, clock, locker, metrics and scheduler. An error
// is a configuration error (exit 2) unless it says otherwise.
func build(ctx context.Context, cfg *config.Config, env cmdEnv) (*replica, error) {
	r := &replica{cfg: cfg, name: replicaName(env.getenv)}
	offset, err := clockOffset(env.getenv)
	if err != nil {
		return nil, err
	}
	r.clock = locking.SystemClock(offset)
	// The log output, watched: a replica whose output blocks is unfit
	// (logstall.go).
	out := newLogWatch(env.Stderr, r.clock, stallAfter(cfg.Lock.TTL))
	log, err := newLogger(out, cfg.Log.Format, cfg.Log.Level, r.name)
	if err != nil {
		return nil, err
	}
	r.log = log
	if offset != 0 {
		log.Warn("clock offset in effect (SLOTLOCK_CLOCK_OFFSET): this replica's wall clock is shifted, for rehearsing clock skew", "offset", offset.String())
	}
	tr, err := newTracing(ctx, env, r.name, log)
	if err != nil {
		return nil, err
	}
	r.closers = append(r.closers, tr.shutdown) // the first closer runs last: after the last lease's end
	opts := locking.Options{Replica: r.name, Clock: r.clock, Logger: log, TracerProvider: tr.provider(), Fit: out.Fit}
	if len(cfg.Redis.Nodes) == 0 {
		r.locker = locking.NewLocal(opts)
		log.Warn("no redis.nodes configured: using in-process locks, which are safe for ONE replica only: " +
			"every replica started this way runs every slot, and none can see the others")
	} else {
		if rd := cfg.Redis; rd.Password != "" && !rd.TLS && rd.Auth == config.AuthPassword {
			// Load accepted it only because redis.allow_insecure is true.
			log.Warn("redis.allow_insecure: the Redis password and every lock cross the network without TLS; anyone on the path can read and replay them",
				"nodes", len(rd.Nodes))
		}
		rc, closeCreds, err := redisConfig(ctx, cfg, log)
		if err != nil {
			r.close()
			return nil, err
		}
		if closeCreds != nil {
			r.closers = append(r.closers, closeCreds)
		}
		redlock.RouteRedisLog(log) // go-redis's own messages: this log, at debug
		l, err := redlock.New(rc, opts)
		if err != nil {
			r.close()
			return nil, err
		}
		r.locker, r.redis = l, &rc
	}
	r.closers = append(r.closers, func() { _ = r.locker.Close() })
	sc := cfg.SchedulerConfig()
	// The settings come from the configuration; the rest is this process's.
	sc.Replica = r.name
	sc.Locker = r.locker
	sc.Clock = r.clock
	sc.Logger = log
	sc.Fit = out.Fit
	// The ops server's /metrics (ops.Handler finds it).
	metrics := ops.NewMetricsWith(ops.MetricsOptions{JoblessHistograms: !cfg.HTTP.JobHistograms})
	if n := len(cfg.Jobs); n >= manyJobs && cfg.HTTP.JobHistograms && cfg.HTTP.Addr != "" {
		log.Info("many jobs: /metrics carries about 40 histogram series a job, most of a scrape; "+
			"http.job_histograms: false keeps one set for all jobs", "jobs", n)
	}
	sc.Metrics = metrics
	r.addNotifier(&sc, metrics)
	sc.TracerProvider = tr.provider()
	sc.Version = buildInfo().version
	sc.DefinitionsHash = cfg.DefinitionsHash()
	sched, err := scheduler.New(sc)
	if err != nil {
		r.close()
		return nil, err
	}
	r.sched = sched
	return r, nil
}

// addNotifier gives the scheduler a notifier when the configuration names
// notify targets. Closing the replica waits a while for the notifications
// under way, so that a command that ran a slot (backfill) sends its own;
// what is still pending then is the sweeper's.
func (r *replica) addNotifier(sc *scheduler.Config, metrics *ops.Metrics) {
	if len(r.cfg.Notify) == 0 {
		return
	}
	r.notifier = notify.New(notify.Config{Targets: r.cfg.NotifyTargets(), Store: r.locker, Replica: r.name,
		Clock: r.clock, Logger: r.log, Metrics: metrics, Secrets: sc.Secrets})
	sc.Notifier = r.notifier
	names := make([]string, len(r.cfg.Notify))
	for i, t := range r.cfg.Notify {
		names[i] = t.Name
	}
	metrics.InitNotifications(names)
	r.closers = append(r.closers, func() { r.notifier.WaitFor(notifyCloseWait) })
}

// notifyCloseWait bounds how long a stopping process waits for its
// notifications under way.
const notifyCloseWait = 10 * time.Second

// start is build for the command name: on failure it prints the error and
// returns the exit code.
func start(ctx context.Context, name string, cfg *config.Config, env cmdEnv) (*replica, int) {
	r, err := build(ctx, cfg, env)
	if err != nil {
		fmt.Fprintf(env.Stderr, "slotlock %s: %v\n", name, err)
		return nil, buildExitCode(err)
	}
	return r, exitOK
}

// startOnStores is start for a command that reads or writes the lock
// stores from outside a replica (history, status, pause): with in-process
// locks what lives in the stores — what — lives in the replica, out of
// reach, and that is a configuration error.
func startOnStores(ctx context.Context, name, what string, cfg *config.Config, env cmdEnv) (*replica, int) {
	if len(cfg.Redis.Nodes) == 0 {
		fmt.Fprintf(env.Stderr, "slotlock %s: needs redis.nodes: with in-process locks %s lives in the replica\n", name, what)
		return nil, exitConfig
	}
	return start(ctx, name, cfg, env)
}

// startupError is a failure to start that is not the configuration's
// fault (exit 1, not 2): e.g. no Entra ID token could be had.
type startupError struct{ err error }

func (e *startupError) Error() string { return e.err.Error() }
func (e *startupError) Unwrap() error { return e.err }

// buildExitCode is the exit code for an error from build.
func buildExitCode(err error) int {
	var se *startupError
	if errors.As(err, &se) {
		return exitFailure
	}
	return exitConfig
}

// manyJobs is the job count from which the start suggests
// http.job_histograms: false (at 10,000 jobs a scrape was 48 MB and 2 s
// of CPU, docs/operations.md).
const manyJobs = 1000

// clockOffset reads SLOTLOCK_CLOCK_OFFSET, a testing aid.
func clockOffset(getenv func(string) string) (time.Duration, error) {
	v := getenv("SLOTLOCK_CLOCK_OFFSET")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("SLOTLOCK_CLOCK_OFFSET %q: not a Go duration (e.g. -800ms, 1.5s)", v)
	}
	return d, nil
}

func cmdRun(ctx context.Context, args []string, env cmdEnv) int {
	hup, stopHUP := notifySIGHUP() // reload.go: from here on SIGHUP reloads, never ends the process
	defer stopHUP()
	f := newFlags("run", env)
	if !f.parseNone(args, env) {
		return exitConfig
	}
	cfg, data, ok := loadRunConfig(f.configPath(env), env)
	if !ok {
		return exitConfig
	}
	r, code := start(ctx, "run", cfg, env)
	if r == nil {
		return code
	}
	defer r.close()
	bi := buildInfo()
	r.log.Info("slotlock starting",
		"version", bi.version, "commit", bi.commit, "go", bi.goVersion,
		"lock_mode", r.locker.Mode(), "jobs", len(cfg.Jobs),
		"config", cfg.Redacted())
	n := len(cfg.Redis.Nodes)
	if warn := nodeCountWarning(n); warn != "" {
		r.log.Warn(warn, "event", evNodeCount, "nodes", n, "tolerates", (n-1)/2)
	}

	// Background helpers: the ops server and the reloader. They stop
	// after the scheduler has shut down, so probes and metrics stay
	// answered during the grace period.
	var wg sync.WaitGroup
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	stopHelpers := func() {
		stopBG()
		wg.Wait()
	}
	if r.redis != nil {
		wg.Go(func() { warnEviction(bg, *r.redis, r.log) })
	}
	reload := newReloader(r, f.configPath(env), env, data)
	if addr := cfg.HTTP.Addr; addr != "" {
		srv, err := newOpsServer(addr, ops.Handler(r.sched, ops.Options{StatusPage: cfg.HTTP.UI}))
		if err != nil {
			stopHelpers()
			r.log.Error("cannot start the ops http server", "error", err.Error())
			return exitFailure
		}
		r.log.Info("ops http server listening", "addr", srv.Addr(), "status_page", cfg.HTTP.UI)
		wg.Go(func() { srv.serve(r.log) })
		wg.Go(func() {
			<-bg.Done()
			srv.shutdown()
		})
	}
	reload.start(bg, &wg, hup)
	if r.notifier != nil {
		wg.Go(func() { r.notifier.Run(bg) })
	}
	err := r.sched.Run(ctx)
	stopHelpers()
	if err != nil {
		r.log.Error("scheduler stopped with an error", "error", err.Error())
		return exitFailure
	}
	r.log.Info("slotlock stopped")
	return exitOK
}
