package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
)

// The log plugin writes one log line per run, through the run's logger (so
// the line carries the run's audit fields and event "job.log"). For demos
// and heartbeats.
//
//	params:
//	  message: "still alive"   # required
//	  level: info              # debug | info | warn | error
func init() { Register("log", newLogJob) }

type logParams struct {
	Message string `yaml:"message"`
	Level   string `yaml:"level"`
}

type logJob struct {
	msg   string
	level slog.Level
}

func newLogJob(params map[string]any) (Job, error) {
	p := logParams{Level: "info"}
	if err := DecodeParams(params, &p); err != nil {
		return nil, err
	}
	var errs []error
	if p.Message == "" {
		errs = append(errs, errors.New("message: required"))
	}
	var lvl slog.Level
	switch strings.ToLower(p.Level) {
	case "debug":
		lvl = slog.LevelDebug
	case "info":
		lvl = slog.LevelInfo
	case "warn", "warning":
		lvl = slog.LevelWarn
	case "error":
		lvl = slog.LevelError
	default:
		errs = append(errs, fmt.Errorf("level: want debug, info, warn or error, got %q", p.Level))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &logJob{msg: p.Message, level: lvl}, nil
}

func (j *logJob) Run(ctx context.Context, run Run) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("log: %w", context.Cause(ctx))
	}
	run.Log().Log(ctx, j.level, j.msg, "event", "job.log")
	return nil
}
