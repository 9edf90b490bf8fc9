package notify

import (
	"context"
	"time"

	"github.com/slotlock/slotlock/scheduler/history"
)

// The sweeper: a notification whose sender died after recording it
// pending is sent by another replica. Every SweepEvery each replica tries
// the sweeper's lease (history.NotifySweeperKey, one holder at a time); the holder
// reads the log, and each pending record older than TakeOverAfter — its
// sender's every try and wait is over, with a margin — it first marks as
// taken (its own pending record in place of the old one, so that another
// sweeper leaves it for TakeOverAfter more), then sends with
// X-Slotlock-Resend: true and the same Idempotency-Key, and records the
// result as the sender would. A sender that was only slow (frozen past
// TakeOverAfter) may still send too: the receiver tells the two apart by
// the key. A record the sweeper's replica has no target for is recorded
// failed, not dropped.

// maxTakeOvers bounds the records one pass takes over (the rest wait for
// the next pass).
const maxTakeOvers = 100

// Run sweeps until ctx ends. Call it once per replica, beside the
// scheduler's Run.
func (n *Notifier) Run(ctx context.Context) {
	for {
		timer := n.cfg.Clock.NewTimer(n.cfg.SweepEvery)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C():
		}
		n.Sweep(ctx)
	}
}

// Sweep runs one pass if this replica takes the sweeper's lease, and
// returns how many records it took over.
func (n *Notifier) Sweep(ctx context.Context) int {
	actx, cancel := context.WithTimeout(ctx, storeTimeout)
	lease, err := n.cfg.Store.Acquire(actx, history.NotifySweeperKey, max(n.cfg.SweepEvery, time.Second))
	cancel()
	if err != nil {
		return 0 // another replica sweeps, or the stores do not answer
	}
	// The lease is left to expire: about one pass per SweepEvery fleet-wide.
	_ = lease
	rctx, cancel := context.WithTimeout(ctx, storeTimeout)
	entries, err := readLog(rctx, n.cfg.Store, logKeep)
	cancel()
	if err != nil {
		return 0
	}
	now := n.cfg.Clock.Now()
	taken := 0
	for _, e := range entries {
		r := e.rec
		if r.State != StatePending || now.Sub(later(r.At, r.TakenAt)) < n.cfg.TakeOverAfter {
			continue
		}
		if taken == maxTakeOvers || ctx.Err() != nil {
			break
		}
		r.By, r.TakenAt = n.cfg.Replica, now.UTC()
		claimed, err := n.append(r, e.value)
		if err != nil {
			continue // tried again next pass
		}
		taken++
		n.cfg.Logger.Warn("taking over a pending notification whose sender stopped before recording its result",
			"event", evResend, "job", r.Job, "slot", r.Slot, "run_id", r.RunID, "to", r.To, "notify_event", r.Event,
			"idempotency_key", r.Key, "writer", r.Writer)
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			n.finish(n.deliver(r, true), claimed)
		}()
	}
	return taken
}

// evResend: a sweeper took over a pending notification.
const evResend = "notify.resending"

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
