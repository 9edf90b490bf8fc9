package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/slotlock/slotlock/internal/config"
	"github.com/slotlock/slotlock/scheduler"
)

// Hot reload of `slotlock run`: on SIGHUP, and when the configuration file
// changes (watch.go), the file is loaded again by the same loader as at
// start (with the same environment). A valid file's jobs replace the
// running ones (scheduler.Reload: added jobs start at their next slot,
// removed ones stop firing while their runs end normally, changed ones go
// on under the same name, slot by slot); the hash moves in the log, the
// metrics, the heartbeat and the status page. An invalid file changes
// nothing and is logged with all its errors. Settings outside the jobs
// keep the values the replica started with (config.RestartNeeded).

// Events of a reload (the contract's config.reloaded and config.rejected,
// and the warning about settings that wait for a restart).
const (
	evConfigReloaded      = "config.reloaded"
	evConfigRejected      = "config.rejected"
	evConfigRestartNeeded = "config.restart_needed"
)

// What started a reload (the events' trigger attribute).
const (
	triggerSIGHUP = "sighup"
	triggerFile   = "file"
)

// notifySIGHUP makes SIGHUP a reload request instead of the end of the
// process (its default action): call it before anything slow.
func notifySIGHUP() (<-chan os.Signal, func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	return ch, func() { signal.Stop(ch) }
}

// loadRunConfig is loadConfig keeping the file's contents, which a reload
// compares the file with.
func loadRunConfig(path string, env cmdEnv) (*config.Config, []byte, bool) {
	data, err := config.ReadFile(path)
	if err != nil {
		printErrors(env, config.Errors{&config.Error{Index: -1, Err: err}})
		return nil, nil, false
	}
	if config.IsEmpty(data) {
		printErrors(env, config.Errors{&config.Error{Index: -1, Where: path, Err: errEmptyConfig}})
		return nil, nil, false
	}
	cfg, err := config.LoadData(path, data, env.Environ)
	if err != nil {
		printErrors(env, err)
		return nil, nil, false
	}
	return cfg, data, true
}

// reloader applies new configurations to a running replica, one at a
// time, on its own goroutine (run).
type reloader struct {
	r       *replica
	path    string
	environ []string
	running *config.Config
	data    []byte // the file's contents last loaded (or rejected)
}

func newReloader(r *replica, path string, env cmdEnv, data []byte) *reloader {
	return &reloader{r: r, path: path, environ: env.Environ, running: r.cfg, data: data}
}

// start watches the file (a failure leaves SIGHUP) and reloads on each
// notice and each SIGHUP until ctx ends; wg tracks its goroutines.
func (rl *reloader) start(ctx context.Context, wg *sync.WaitGroup, hup <-chan os.Signal) {
	var notices <-chan struct{}
	if w, err := watchConfig(rl.path, rl.r.log); err != nil {
		rl.r.log.Warn("cannot watch the configuration file; reload it with SIGHUP", "path", rl.path, "error", err.Error())
	} else {
		rl.r.log.Info("watching the configuration file; a change or SIGHUP reloads the jobs", "path", rl.path)
		notices = w.C
		wg.Go(func() { w.run(ctx) })
	}
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				rl.reload(ctx, triggerSIGHUP)
			case <-notices:
				rl.reload(ctx, triggerFile)
			}
		}
	})
}

// reload loads the file and, if it is valid, puts its jobs in force.
func (rl *reloader) reload(ctx context.Context, trigger string) {
	log := rl.r.log
	data, err := config.ReadFile(rl.path)
	if err != nil {
		rl.reject(trigger, config.Errors{&config.Error{Index: -1, Err: err}})
		return
	}
	if trigger == triggerFile && bytes.Equal(data, rl.data) {
		log.Debug("configuration file event, contents unchanged: nothing to reload", "path", rl.path)
		return
	}
	rl.data = data
	if config.IsEmpty(data) {
		// Most often a file being rewritten in place, caught between its
		// truncation and its new contents; as at start (errEmptyConfig),
		// an empty file is refused.
		rl.reject(trigger, fmt.Errorf("%w; keeping the jobs in force", errEmptyConfig))
		return
	}
	next, err := config.LoadData(rl.path, data, rl.environ)
	if err != nil {
		rl.reject(trigger, err)
		return
	}
	restart := rl.running.RestartNeeded(next)
	cfg := rl.running.WithJobs(next)
	added, removed, changed := rl.running.DiffJobs(cfg)
	prev, hash := rl.running.DefinitionsHash(), cfg.DefinitionsHash()
	if _, err := rl.r.sched.Reload(ctx, hash, cfg.JobSpecs()); err != nil {
		if errors.Is(err, scheduler.ErrStopped) || ctx.Err() != nil {
			log.Info("configuration not reloaded: the replica is shutting down", "trigger", trigger, "path", rl.path)
			return
		}
		rl.reject(trigger, err)
		return
	}
	rl.running = cfg // the metrics and the status page follow the scheduler (ops.Handler)
	log.Info("configuration reloaded", "event", evConfigReloaded, "config_hash", hash, "previous_hash", prev,
		"trigger", trigger, "path", rl.path, "jobs", len(cfg.Jobs),
		"added", nonNil(added), "removed", nonNil(removed), "changed", nonNil(changed))
	if len(restart) > 0 {
		log.Warn("configuration settings changed that only a restart applies; they keep their values until then",
			"event", evConfigRestartNeeded, "settings", restart, "trigger", trigger, "path", rl.path)
	}
}

// reject logs a configuration that was not applied, with every error, on
// one line: errors lists them as `slotlock validate` prints them, error
// joins them.
func (rl *reloader) reject(trigger string, err error) {
	var msgs []string
	var errs config.Errors
	if errors.As(err, &errs) {
		for _, e := range errs {
			msgs = append(msgs, e.Error())
		}
	} else {
		msgs = []string{err.Error()}
	}
	rl.r.log.Error("configuration rejected: the replica keeps the jobs it runs", "event", evConfigRejected,
		"trigger", trigger, "path", rl.path, "config_hash", rl.running.DefinitionsHash(),
		"errors", msgs, "error", strings.Join(msgs, "; "))
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
