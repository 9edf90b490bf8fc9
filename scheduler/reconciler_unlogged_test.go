package scheduler

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// TestReconcilerReportsSkipsWhoseWriterDied: a replica writes a skipped
// slot's entry and then logs it; killed in between, the outcome is in
// the history and in no log line. The reconciler reports again a skip
// whose writer never beat after writing it and is dead (r9), not one
// whose writer beat after (r8), and judges no further than a skip whose
// writer may still beat (r7) — until it is known dead, when that one is
// reported too.
func TestReconcilerReportsSkipsWhoseWriterDied(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, s, _ := backfillEnv(t, OverlapAllow, 50)
		ctx := context.Background()
		j, _ := s.job("bf")
		base := time.Now().Add(-40 * time.Second).Truncate(time.Second)
		slot := func(i int) time.Time { return base.Add(time.Duration(i) * time.Second) }
		ms := func(t time.Time) int64 { return t.UnixMilli() }
		entries := []history.Entry{
			{Outcome: history.OutcomeSucceeded},
			{Outcome: history.OutcomeSkipped, Reason: history.ReasonOverlap, Replica: "r9", WrittenMS: ms(slot(1).Add(500 * time.Millisecond))},
			{Outcome: history.OutcomeSkipped, Reason: history.ReasonOverlap, Replica: "r8", WrittenMS: ms(slot(2).Add(300 * time.Millisecond))},
			{Outcome: history.OutcomeSucceeded},
			{Outcome: history.OutcomeSkipped, Reason: history.ReasonReplaced, BySlot: slotString(slot(5)), Replica: "r7",
				WrittenMS: ms(slot(4).Add(200 * time.Millisecond))},
		}
		for i, h := range entries {
			h.Slot = slotString(slot(i))
			if err := e.locker.AppendLog(ctx, "bf", locking.LogAppend{Entry: h.LogEntry(slot(i)), Keep: 50}); err != nil {
				t.Fatal(err)
			}
		}
		beats := []struct {
			replica string
			seen    time.Time
			beat    string
		}{
			{"r9", slot(1).Add(-2 * time.Second), "1s"}, // its last beat, before the write
			{"r8", slot(2).Add(5 * time.Second), "1s"},  // beat on after the write
			{"r7", slot(4), "1m"},                       // counted alive for three minutes more
		}
		for _, b := range beats {
			hb := history.ReplicaInfo{Replica: b.replica, Instance: b.replica + "-1", Started: base.Add(-time.Hour), Beat: b.beat}
			if err := e.locker.AppendLog(ctx, history.FleetFamily, hb.Append(b.seen)); err != nil {
				t.Fatal(err)
			}
		}
		var slots []time.Time
		for i := range entries {
			slots = append(slots, slot(i))
		}

		p := &pass{r: s.reconciler}
		judged, err := p.judge(ctx, j, slots)
		if err != nil || !judged.Equal(slot(3)) {
			t.Fatalf("judged up to %v (%v), want %v: not the slot whose writer may still beat", judged, err, slot(3))
		}
		again := where(e.sink.events(t), evSlotSkipped, "job", "bf")
		if len(again) != 1 || again[0].str("slot") != slotString(slot(1)) || again[0].str("reason") != "overlap" ||
			again[0].str("skipped_by") != "r9" || again[0].str("note") != unloggedNote {
			t.Fatalf("slot.skipped lines %v, want one for %s skipped by r9", again, slotString(slot(1)))
		}

		time.Sleep(3 * time.Minute) // r7 silent for three of its beats: dead
		p = &pass{r: s.reconciler}
		if judged, err = p.judge(ctx, j, slots[4:]); err != nil || !judged.Equal(slot(4)) {
			t.Fatalf("judged up to %v (%v), want %v", judged, err, slot(4))
		}
		again = where(e.sink.events(t), evSlotSkipped, "job", "bf", "skipped_by", "r7")
		if len(again) != 1 || again[0].str("reason") != "replaced" || again[0].str("by_slot") != slotString(slot(5)) {
			t.Fatalf("slot.skipped lines by r7 %v, want one, replaced by %s", again, slotString(slot(5)))
		}
	})
}

// crashAtSkip models a replica killed right after it wrote a skip for
// overlap and before it logged it: from that line on, its log handler
// writes nothing and its heartbeats and claims no longer reach the
// stores (crashLocker).
type crashAtSkip struct {
	slog.Handler
	state *crashState
}

type crashState struct {
	once    sync.Once
	crashed chan struct{}
	slot    string
}

func (h crashAtSkip) Handle(ctx context.Context, r slog.Record) error {
	select {
	case <-h.state.crashed:
		return nil
	default:
	}
	attrs := map[string]string{}
	r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
	if attrs["event"] == evSlotSkipped && attrs["reason"] == string(history.ReasonOverlap) {
		h.state.once.Do(func() { h.state.slot = attrs["slot"]; close(h.state.crashed) })
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h crashAtSkip) WithAttrs(as []slog.Attr) slog.Handler {
	return crashAtSkip{h.Handler.WithAttrs(as), h.state}
}

func (h crashAtSkip) WithGroup(g string) slog.Handler {
	return crashAtSkip{h.Handler.WithGroup(g), h.state}
}

// crashLocker fails the heartbeats and claims of a crashed replica.
type crashLocker struct {
	locking.Locker
	state *crashState
}

var errCrashed = errors.New("test: the replica was killed")

func (c crashLocker) dead() bool {
	select {
	case <-c.state.crashed:
		return true
	default:
		return false
	}
}

func (c crashLocker) AppendLog(ctx context.Context, family string, a locking.LogAppend) error {
	if c.dead() {
		return errCrashed
	}
	return c.Locker.AppendLog(ctx, family, a)
}

func (c crashLocker) Claim(ctx context.Context, key locking.Key, ttl time.Duration, opts ...locking.ClaimOption) (*locking.Lease, error) {
	if c.dead() {
		return nil, errCrashed
	}
	return c.Locker.Claim(ctx, key, ttl, opts...)
}

// TestSkipOfAReplicaKilledBeforeItsLineIsReported: a replica skips a slot
// for overlap (its previous run still holds the job lease), writes the
// skip to the history and is killed before logging it. Another replica's
// reconciler reports the slot, skipped for overlap by the dead one: no
// slot is left with an outcome in the history and no line in the logs.
func TestSkipOfAReplicaKilledBeforeItsLineIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{d: 1500 * time.Millisecond, now: time.Now}
		state := &crashState{crashed: make(chan struct{})}
		a, err := New(Config{Replica: "a", Locker: crashLocker{e.locker, state}, Metrics: e.metrics,
			Logger:  slog.New(crashAtSkip{slog.NewJSONHandler(e.sink, &slog.HandlerOptions{Level: slog.LevelDebug}), state}).With("replica", "a"),
			LockTTL: 30 * time.Second, MaxClockSkew: time.Second, ShutdownGrace: 5 * time.Second, Beat: time.Second,
			ReconcileEvery: time.Hour, DefinitionsHash: "defs", Jobs: []JobSpec{everySecond(t, "slow", rec)}})
		if err != nil {
			t.Fatal(err)
		}
		stopA := running(t, a)
		select {
		case <-state.crashed:
		case <-time.After(time.Minute):
			t.Fatal("no slot skipped for overlap")
		}
		stopA()

		b := e.reconciling("b", nil, time.Second, everySecond(t, "slow", rec))
		stopB := running(t, b)
		time.Sleep(2 * time.Minute)
		stopB()

		lines := where(e.sink.events(t), evSlotSkipped, "job", "slow", "slot", state.slot)
		if len(lines) != 1 || lines[0].str("replica") != "b" || lines[0].str("reason") != string(history.ReasonOverlap) ||
			lines[0].str("skipped_by") != "a" {
			e.sink.dump(t)
			t.Fatalf("slot.skipped lines for %s: %v, want one by b's reconciler naming a", state.slot, lines)
		}
	})
}
