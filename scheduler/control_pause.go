package scheduler

import (
	"context"
	"fmt"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// A paused job (slotlock pause) fires as usual, but its slots' claims are
// refused by the lock stores in the same round trip (locking.ErrPaused):
// every replica skips the slot with reason paused, and counts it as
// handled, so that neither a misfire recovery nor a restarted replica's
// start-up check takes a paused slot for a missed one (the attempt's
// verdict paused, carried out by pausedSlot in end.go). A manual trigger
// is not paused.

// notePause tells the metrics, and the log once per change as this replica
// sees it, whether j is paused (p.Paused) at its latest slot.
func (c *control) notePause(j *job, p locking.Pause) {
	j.mu.Lock()
	was := j.paused
	j.paused = p.Paused
	j.mu.Unlock()
	if was == p.Paused {
		return
	}
	c.metrics.JobPaused(j.name(), p.Paused)
	if p.Paused {
		c.log.Info("job paused: its slots are skipped until the pause ends", append([]any{"event", EventJobPaused,
			"job", j.name()}, pauseAttrs(p, "reason")...)...)
	} else {
		c.log.Info("job resumed: its slots run again", "event", EventJobResumed, "job", j.name())
	}
}

// pauseAttrs describes a pause for the log: until (RFC 3339 UTC, absent
// when it has no end), by, and the operator's reason under reasonKey
// ("reason" in job.paused; "pause_reason" in slot.skipped, whose reason is
// "paused").
func pauseAttrs(p locking.Pause, reasonKey string) []any {
	var a []any
	if !p.Until.IsZero() {
		a = append(a, "until", p.Until.UTC().Format(time.RFC3339))
	}
	if p.By != "" {
		a = append(a, "by", p.By)
	}
	if p.Reason != "" {
		a = append(a, reasonKey, p.Reason)
	}
	return a
}

// pauseOnFailure pauses j, as `slotlock pause` does (no end), when its
// last PauseOnFailure recorded slots all failed. It runs after a failed
// run's outcome reached the history; several replicas may find the streak
// at once, and write the same pause.
func (c *control) pauseOnFailure(j *job) {
	n := j.spec.PauseOnFailure
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	h, err := history.ReadEntries(ctx, c.cfg.Locker, j.name(), time.Time{}, n)
	if err != nil || len(h) < n {
		return
	}
	for _, e := range h {
		if e.Outcome != history.OutcomeFailed {
			return
		}
	}
	if cur, err := c.cfg.Locker.ReadPause(ctx, j.name()); err != nil || cur.ActiveAt(c.clock.Now()) {
		return
	}
	reason := fmt.Sprintf("pause_on_failure: %d consecutive failed slots", n)
	p, err := c.cfg.Locker.SetPause(ctx, j.name(), locking.Pause{Paused: true, By: c.cfg.Replica, Reason: reason})
	if err != nil {
		c.log.Warn("could not pause the job after consecutive failures", "event", evLockReleaseFailed,
			"job", j.name(), "error", err.Error())
		return
	}
	c.log.Warn("job paused: its last slots all failed", append([]any{"event", EventJobPaused, "job", j.name()},
		pauseAttrs(p, "reason")...)...)
}
