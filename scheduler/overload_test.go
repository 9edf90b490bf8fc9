package scheduler

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
	"github.com/slotlock/slotlock/scheduler/history"
)

// TestOwnOverloadIsNotAnOutage: a claim that missed its majority only
// because this replica's queue did not send it is the replica's own
// overload — skipped late, never no_quorum, not retried, not an outage;
// one that also met a node that timed out is an outage (no_quorum,
// retried), though errors.Is(err, ErrBusy) holds for both.
func TestOwnOverloadIsNotAnOutage(t *testing.T) {
	busy := &locking.NodeError{Addr: "a:1", Err: locking.ErrBusy}
	timeout := &locking.NodeError{Addr: "b:1", Err: context.DeadlineExceeded}
	quorum := func(errs ...error) error {
		return &locking.QuorumError{Op: "acquire", Need: 2, Got: 1, Err: errors.Join(errs...)}
	}
	for _, c := range []struct {
		name   string
		err    error
		own    bool
		reason history.Reason
	}{
		{"not sent to any node", quorum(busy, &locking.NodeError{Addr: "c:1", Err: locking.ErrBusy}), true, history.ReasonLate},
		{"busy alone", locking.ErrBusy, true, history.ReasonLate},
		{"busy and a timeout", quorum(busy, timeout), false, history.ReasonNoQuorum},
		{"timeouts", quorum(timeout, timeout), false, history.ReasonNoQuorum},
	} {
		if got := ownOverload(c.err); got != c.own {
			t.Errorf("%s: ownOverload %v, want %v", c.name, got, c.own)
		}
		if want := map[bool]admitSignal{true: admitBusy, false: admitAnswered}[c.own]; overloaded(c.err) != want {
			t.Errorf("%s: admission signal %v, want %v", c.name, overloaded(c.err), want)
		}
		synctest.Test(t, func(t *testing.T) {
			_, s, _ := backfillEnv(t, OverlapAllow, 10)
			j, _ := s.job("bf")
			a := s.attempts.newAttempt(j, time.Now().Truncate(time.Second), originScheduled)
			if v := a.lost(c.err); v.reason != c.reason {
				t.Errorf("%s: skipped %s, want %s", c.name, v.reason, c.reason)
			}
		})
	}
}

// TestPausedAfterTheSlotWasDueIsHeld: a claim refused while paused, whose
// key another lease holds since before the pause began (a run of the slot
// going on), is that run's slot — skipped held, no paused entry beside
// its outcome; refused by a pause that covers the slot, it is paused.
func TestPausedAfterTheSlotWasDueIsHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, s, _ := backfillEnv(t, OverlapAllow, 10)
		j, _ := s.job("bf")
		due := time.Now().Add(-2 * time.Second).Truncate(time.Second)
		key := history.SlotKey("bf", due)
		held := driver.ParseHeld(key, "tok|r2")
		for _, c := range []struct {
			name   string
			since  time.Time
			act    act
			reason history.Reason
		}{
			{"paused after it was due", due.Add(time.Second), actRelease, history.ReasonHeld},
			{"paused before it was due", due.Add(-time.Minute), actPaused, history.ReasonPaused},
		} {
			p := locking.Pause{Paused: true, Version: c.since.UnixMilli(), By: "ops"}
			a := s.attempts.newAttempt(j, due, originScheduled)
			v := a.claimRefused(&locking.PausedError{Key: key, Pause: p, Refusal: held})
			if v.act != c.act || v.reason != c.reason || v.entry != nil {
				t.Errorf("%s: act %v reason %s entry %v, want act %v reason %s and no entry", c.name, v.act, v.reason, v.entry, c.act, c.reason)
			}
		}
	})
}
