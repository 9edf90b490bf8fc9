package scheduler

import (
	"testing"
	"testing/synctest"
	"time"
)

// Acquisitions the stores could not settle at once — a split vote, a hold
// unconfirmed, a transient loss of quorum — are tried again within the
// slot's freshness, and said when it runs out.

// faultyEverySecond runs replica r1 with one every-second job over a
// faultyLocker, for the lock-retry tests below: its env, the locker to
// inject faults with, the job's runs, and its stop.
func faultyEverySecond(t *testing.T) (*env, *faultyLocker, *recorder, func()) {
	e := newEnv(t)
	f := &faultyLocker{Locker: e.locker}
	e.locker = f
	rec := &recorder{now: time.Now}
	s := e.scheduler("r1", nil, everySecond(t, "job", rec))
	return e, f, rec, running(t, s)
}

// requireOneRunOfSlot1 fails unless rec holds one run, of slot 1, started
// lo to hi after it was due (after the faults named).
func requireOneRunOfSlot1(t *testing.T, e *env, rec *recorder, lo, hi time.Duration, after string) {
	t.Helper()
	runs := rec.all()
	if len(runs) != 1 || !runs[0].Run.Slot.Equal(bubbleStart.Add(time.Second)) {
		e.sink.dump(t)
		t.Fatalf("runs: %+v", runs)
	}
	if d := runs[0].Start.Sub(runs[0].Run.Slot); d < lo || d > hi {
		t.Errorf("start delay %v after %s", d, after)
	}
}

// TestSplitVoteRetried: a split vote is retried while the slot is fresh,
// so the slot still runs, once.
func TestSplitVoteRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, f, rec, stop := faultyEverySecond(t)
		time.Sleep(500 * time.Millisecond)
		f.split.Store(3)
		time.Sleep(time.Second)
		stop()
		requireOneRunOfSlot1(t, e, rec, 3*time.Millisecond, 20*time.Millisecond, "3 split votes")
		if n := len(where(e.sink.events(t), "slot.skipped")); n != 0 {
			t.Errorf("%d skips", n)
		}
	})
}

// TestUnconfirmedHoldRetried: a claim refused by another replica's claim
// that no store shows started, while a store does not hold it (a replica
// whose answers are lost or late leaves its failed claim there until its
// undo follows), is asked again while the slot is fresh: the slot runs
// once, a little late. Refused by a claim held everywhere (its winner's),
// it is skipped held, asked once.
func TestUnconfirmedHoldRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, f, rec, stop := faultyEverySecond(t)
		time.Sleep(500 * time.Millisecond)
		f.unconfirmed.Store(3)
		time.Sleep(time.Second) // slot 1 runs
		f.held.Store(1)
		before := f.acquires.Load()
		time.Sleep(time.Second) // slot 2 skipped
		claims := f.acquires.Load() - before
		stop()
		// Three refusals: backoffs of 25-37, 50-75 and 100-150 ms.
		requireOneRunOfSlot1(t, e, rec, 175*time.Millisecond, 270*time.Millisecond, "3 unconfirmed holds")
		sk := where(e.sink.events(t), "slot.skipped")
		if len(sk) != 1 || sk[0].str("reason") != "held" || sk[0].str("slot") != bubbleStart.Add(2*time.Second).UTC().Format(time.RFC3339) {
			t.Errorf("skips: %v", sk)
		}
		if claims != 1 {
			t.Errorf("slot 2, held by a live claim, was asked %d times", claims)
		}
	})
}

// TestTransientNoQuorumRetried: an Acquire that fails for lack of a
// majority (one node down, another stalled for a moment) is retried after
// a short backoff while the slot is fresh: the slot runs once, a little
// late, and nothing is logged as skipped (e2e-2).
func TestTransientNoQuorumRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, f, rec, stop := faultyEverySecond(t)
		time.Sleep(500 * time.Millisecond)
		f.blip.Store(3)
		time.Sleep(time.Second)
		stop()
		// Three failures: backoffs of 20-30, 40-60 and 80-120 ms.
		requireOneRunOfSlot1(t, e, rec, 140*time.Millisecond, 220*time.Millisecond, "3 quorum failures")
		if sk := where(e.sink.events(t), "slot.skipped"); len(sk) != 0 {
			t.Errorf("skips: %v", sk)
		}
	})
}

// TestNoQuorumLoggedWhenFreshnessRunsOut: while no majority answers, a slot
// is retried until its freshness (slot + lateness bound) runs out and only
// then logged as no_quorum; shutdown ends the retries at once.
func TestNoQuorumLoggedWhenFreshnessRunsOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		f := &faultyLocker{Locker: e.locker}
		e.locker = f
		rec := &recorder{now: time.Now}
		s := e.scheduler("r1", nil, everySecond(t, "job", rec))
		stop := running(t, s)
		time.Sleep(500 * time.Millisecond)
		f.down.Store(true)
		time.Sleep(3200 * time.Millisecond) // at 3.7s slot 1 is still fresh (until 4s); slots 2..4 retry beyond 4.2s
		nq := where(e.sink.events(t), "slot.skipped", "reason", "no_quorum")
		if len(nq) != 0 {
			t.Fatalf("no_quorum logged while slot 1 is fresh: %v", nq)
		}
		time.Sleep(500 * time.Millisecond)
		nq = where(e.sink.events(t), "slot.skipped", "reason", "no_quorum")
		if len(nq) != 1 || nq[0].str("slot") != slotAt(1) || nq[0].str("level") != "WARN" || nq[0].str("error") == "" {
			stop()
			e.sink.dump(t)
			t.Fatalf("no_quorum lines: %v", nq)
		}
		at, _ := time.Parse(time.RFC3339Nano, nq[0].str("time"))
		if lo, hi := bubbleStart.Add(time.Second+s.Lateness()-300*time.Millisecond), bubbleStart.Add(time.Second+s.Lateness()); at.Before(lo) || !at.Before(hi) {
			t.Errorf("no_quorum for slot 1 logged at %v, want just before its freshness ends (%v)", at, hi)
		}
		began := time.Now()
		stop()
		if d := time.Since(began); d != 0 {
			t.Errorf("Run returned %v after its ctx ended; quorum retries must stop at once", d)
		}
		if len(rec.all()) != 0 {
			t.Errorf("ran without a quorum")
		}
		if n := len(where(e.sink.events(t), "slot.skipped", "reason", "no_quorum")); n != 1 {
			t.Errorf("%d no_quorum lines; slots whose retries shutdown ended are not logged", n)
		}
	})
}
