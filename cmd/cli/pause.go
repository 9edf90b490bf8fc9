package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler"
)

// pauseTimeout bounds the command's round trips to the lock stores.
const pauseTimeout = 10 * time.Second

// maxPauseReason bounds --reason: it is stored in the lock stores, logged
// by every replica and shown by status.
const maxPauseReason = 1000

func cmdPause(ctx context.Context, args []string, env cmdEnv) int {
	f := newFlags("pause", env)
	forDur := f.Duration("for", 0, "end the pause by itself after this long (default: until resumed)")
	reason := f.String("reason", "", "why, for the logs and status")
	check := func() bool {
		// --for 0s would store a pause without an end: the same as no
		// --for, which is surely not what was meant.
		forSet := false
		f.Visit(func(fl *flag.Flag) { forSet = forSet || fl.Name == "for" })
		if forSet && *forDur <= 0 {
			fmt.Fprintf(env.Stderr, "slotlock pause: --for %s: must be positive (leave --for out to pause until resume)\n", *forDur)
			return false
		}
		if len(*reason) > maxPauseReason {
			fmt.Fprintf(env.Stderr, "slotlock pause: --reason: at most %d bytes, got %d\n", maxPauseReason, len(*reason))
			return false
		}
		return true
	}
	return pauseOrResume(ctx, f, args, env, check, func(now time.Time) (locking.Pause, bool) {
		p := locking.Pause{Paused: true, Reason: *reason}
		if *forDur > 0 {
			p.Until = now.Add(*forDur)
		}
		return p, true
	})
}

func cmdResume(ctx context.Context, args []string, env cmdEnv) int {
	f := newFlags("resume", env)
	return pauseOrResume(ctx, f, args, env, func() bool { return true }, func(time.Time) (locking.Pause, bool) {
		return locking.Pause{}, true
	})
}

// pauseOrResume writes the pause state that state builds for the one job
// named in args to the lock stores, and logs job.paused or job.resumed.
// check judges the flags before anything is started.
func pauseOrResume(ctx context.Context, f *flags, args []string, env cmdEnv, check func() bool, state func(time.Time) (locking.Pause, bool)) int {
	name := f.Name()
	cfg, job, ok := loadJobArg(f, args, env, map[string]string{"pause": "[--for DUR] [--reason TEXT] "}[name])
	if !ok || !check() {
		return exitConfig
	}
	if len(cfg.Redis.Nodes) == 0 {
		fmt.Fprintf(env.Stderr, "slotlock %s: needs redis.nodes: with in-process locks no replica would see it\n", name)
		return exitConfig
	}
	r, code := start(ctx, name, cfg, env)
	if r == nil {
		return code
	}
	defer r.close()
	if _, _, code := fleetJob(ctx, r, env, name, job); code != exitOK {
		return code
	}
	p, ok := state(r.clock.Now())
	if !ok {
		return exitConfig
	}
	p.By = r.name // the contract's by; the control audit names the OS user and host too
	detail := p.Reason
	if !p.Until.IsZero() {
		detail = strings.TrimSpace(detail + " (until " + p.Until.UTC().Format(time.RFC3339) + ")")
	}
	if recordControl(ctx, r, env, name, job, detail, nil) != nil {
		return exitFailure
	}
	wctx, cancel := context.WithTimeout(ctx, pauseTimeout)
	defer cancel()
	got, err := r.locker.SetPause(wctx, job, p)
	if err != nil {
		// A write that reached some nodes is completed by the next reader
		// that sees it (locking/redlock's repair), so it may still take
		// effect: the operator is told to run the command again.
		r.log.Error(name+" failed: the lock stores did not answer; it may still take effect on every replica "+
			"(a node it reached passes it on): run it again, or the opposite command, once the stores answer",
			"job", job, "error", err.Error())
		return exitFailure
	}
	if got.Paused {
		attrs := []any{"event", scheduler.EventJobPaused, "job", job, "by", got.By, "reason", got.Reason}
		if !got.Until.IsZero() {
			attrs = append(attrs, "until", got.Until.UTC().Format(time.RFC3339))
		}
		r.log.Info("job paused: every replica skips its slots from the next one on", attrs...)
	} else {
		r.log.Info("job resumed: its slots run again from the next one on", "event", scheduler.EventJobResumed, "job", job, "by", got.By)
	}
	return exitOK
}
