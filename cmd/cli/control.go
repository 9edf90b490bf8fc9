package cli

import (
	"context"
	"os"
	"os/user"

	"github.com/slotlock/slotlock/scheduler/history"
)

// actor names who runs this command: the OS user, the host, and the
// replica name (SLOTLOCK_REPLICA or its default), for the control audit.
func actor(r *replica, env cmdEnv) history.Control {
	c := history.Control{User: "unknown", Host: "unknown", Replica: r.name}
	if u, err := user.Current(); err == nil && u.Username != "" {
		c.User = u.Username
	} else if v := env.getenv("USER"); v != "" {
		c.User = v
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		c.Host = h
	}
	return c
}

// recordControl writes an operator action to the fleet log. It is
// written before the action takes effect where it can be (pause, resume,
// backfill, trigger), so an action is never done unaudited; a failed write
// fails the command.
func recordControl(ctx context.Context, r *replica, env cmdEnv, action, job, detail string, run *history.Entry) error {
	c := actor(r, env)
	c.Action, c.Job, c.Detail, c.Run = action, job, detail, run
	wctx, cancel := context.WithTimeout(ctx, pauseTimeout)
	defer cancel()
	err := history.RecordControl(wctx, r.locker, c, r.clock.Now())
	if err != nil {
		r.log.Error("slotlock "+action+": the control audit could not be written; nothing done", "job", job, "error", err.Error())
		return err
	}
	r.log.Info("control action recorded", "event", "control.recorded", "action", action, "job", job, "by", c.Who(), "detail", detail)
	return nil
}
