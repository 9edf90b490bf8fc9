package scheduler

import (
	"errors"
	"time"

	"github.com/slotlock/slotlock/locking"
)

// A paused job (slotlock pause) fires as usual, but its slots' claims are
// refused by the lock stores in the same round trip (locking.ErrPaused):
// every replica skips the slot with reason paused, and counts it as
// handled, so that neither a misfire recovery nor a restarted replica's
// start-up check takes a paused slot for a missed one. A manual trigger is
// not paused.

// pausedSlot logs slot t of j as skipped for a pause and moves the job's
// record past it.
func (s *Scheduler) pausedSlot(j *job, t time.Time, err error) {
	var pe *locking.PausedError
	errors.As(err, &pe)
	s.quorumSeen()
	s.notePause(j, pe.Pause)
	s.skipped(j.name(), slotString(t), ReasonPaused, 1, pauseAttrs(pe.Pause, "pause_reason")...)
	s.recordHandled(j, t)
}

// notePause tells the metrics, and the log once per change as this replica
// sees it, whether j is paused (p.Paused) at its latest slot.
func (s *Scheduler) notePause(j *job, p locking.Pause) {
	j.mu.Lock()
	was := j.paused
	j.paused = p.Paused
	j.mu.Unlock()
	if was == p.Paused {
		return
	}
	s.metrics.JobPaused(j.name(), p.Paused)
	if p.Paused {
		s.log.Info("job paused: its slots are skipped until the pause ends", append([]any{"event", EventJobPaused,
			"job", j.name()}, pauseAttrs(p, "reason")...)...)
	} else {
		s.log.Info("job resumed: its slots run again", "event", EventJobResumed, "job", j.name())
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
