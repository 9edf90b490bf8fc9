package scheduler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// countingLocker wraps a Locker: every Claim takes d (fake time inside a
// bubble), and is counted per key with the instant it was answered; busy
// makes a key's Claims fail with locking.ErrBusy, as the transport does
// when this replica's own queue cannot send them in time.
type countingLocker struct {
	locking.Locker
	d    time.Duration
	busy map[locking.Key]bool

	mu       sync.Mutex
	claims   map[locking.Key]int
	answered map[locking.Key]time.Time
}

func newCountingLocker(d time.Duration) *countingLocker {
	return &countingLocker{Locker: locking.NewLocal(locking.Options{Replica: "local"}), d: d,
		busy: map[locking.Key]bool{}, claims: map[locking.Key]int{}, answered: map[locking.Key]time.Time{}}
}

func (c *countingLocker) Claim(ctx context.Context, key locking.Key, ttl time.Duration, opts ...locking.ClaimOption) (*locking.Lease, error) {
	c.mu.Lock()
	c.claims[key]++
	c.mu.Unlock()
	time.Sleep(c.d)
	c.mu.Lock()
	c.answered[key] = time.Now()
	c.mu.Unlock()
	if c.busy[key] {
		return nil, &locking.QuorumError{Op: "acquire", Key: key, Need: 2, Got: 0,
			Err: errors.Join(&locking.NodeError{Addr: "test:1", Err: locking.ErrBusy})}
	}
	return c.Locker.Claim(ctx, key, ttl, opts...)
}

func (c *countingLocker) claimsOf(key locking.Key) (int, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.claims[key], c.answered[key]
}

// admissionScheduler is one replica over l whose claims are admitted four
// at a time, each expected to take service.
func admissionScheduler(t *testing.T, sink *logSink, l locking.Locker, service time.Duration, specs ...JobSpec) *Scheduler {
	s, err := New(Config{Replica: "r0", Locker: l, Logger: sink.logger("r0"), LockTTL: 30 * time.Second,
		MaxClockSkew: 2 * time.Second, ShutdownGrace: 5 * time.Second, MaxInFlight: 4, Jobs: specs})
	if err != nil {
		t.Fatal(err)
	}
	s.admit.service = service
	return s
}

// TestAdmissionShedsBeforeAnyCall: 16 jobs due at the same second, claims
// admitted four at a time, each taking 1.1 s, the slots fresh for three:
// the replica can answer only some of them in time. Those it cannot are
// shed — at once or when their turn comes — with their slot.skipped late
// line and no Claim at all; every claim it sends is answered before its
// slot turns late, and every slot has exactly one outcome. (With claims of
// exactly a second, the third batch's answer fell on the deadline itself,
// and microseconds of a candidate's spread decided the count.)
func TestAdmissionShedsBeforeAnyCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const service = 1100 * time.Millisecond
		sink, l := &logSink{}, newCountingLocker(service)
		rec := &recorder{now: time.Now}
		var specs []JobSpec
		for i := range 16 {
			sp := cronSpec(t, fmt.Sprintf("job%02d", i), "0 * * * * *", rec)
			sp.Misfire = Misfire{Policy: MisfireSkip}
			specs = append(specs, sp)
		}
		stop := running(t, admissionScheduler(t, sink, l, service, specs...))
		time.Sleep(time.Until(bubbleStart.Add(70 * time.Second)))
		stop()

		slot := bubbleStart.Add(60 * time.Second)
		evs := sink.events(t)
		ran, shed := 0, 0
		for _, sp := range specs {
			starts := where(evs, "run.started", "job", sp.Name, "slot", slotString(slot))
			late := where(evs, "slot.skipped", "job", sp.Name, "slot", slotString(slot), "reason", string(history.ReasonLate))
			n, answered := l.claimsOf(history.SlotKey(sp.Name, slot))
			switch {
			case len(starts)+len(late) != 1:
				t.Errorf("%s: %d run.started, %d late lines: want one outcome", sp.Name, len(starts), len(late))
			case len(late) == 1 && n != 0:
				t.Errorf("%s: shed late after %d Claim calls: want none", sp.Name, n)
			case len(starts) == 1 && n != 1:
				t.Errorf("%s: ran after %d Claim calls", sp.Name, n)
			case n > 0 && answered.After(slot.Add(3*time.Second)):
				t.Errorf("%s: claim answered at %v, after the slot's freshness", sp.Name, answered.Sub(slot))
			case len(late) == 1 && (late[0].num("missed") != 1 || late[0].str("note") != ""):
				t.Errorf("%s: shed slot's line %v: want missed 1 and no note (the reason says it)", sp.Name, late[0])
			}
			ran += len(starts)
			shed += len(late)
		}
		// Six wait (a seventh would be answered after 1.1 × (1 + 7/4) s >
		// 3 s), the rest are shed at once; four are sent at 60 s, four at
		// 61.1 s; the two left at 62.2 s would be answered at 63.3 s: late.
		if ran != 8 || shed != 8 {
			t.Errorf("%d ran, %d shed: want 8 and 8", ran, shed)
		}
	})
}

// TestAdmissionBusyNotRetried: a claim that the transport did not send
// (locking.ErrBusy: this replica's own queue) is not retried, though the
// slot is fresh for seconds more: it is shed as late, once.
func TestAdmissionBusyNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink, l := &logSink{}, newCountingLocker(10*time.Millisecond)
		sp := cronSpec(t, "busy", "0 * * * * *", &recorder{now: time.Now})
		sp.Misfire = Misfire{Policy: MisfireSkip}
		slot := bubbleStart.Add(60 * time.Second)
		key := history.SlotKey(sp.Name, slot)
		l.busy[key] = true
		stop := running(t, admissionScheduler(t, sink, l, 10*time.Millisecond, sp))
		time.Sleep(time.Until(bubbleStart.Add(70 * time.Second)))
		stop()

		if n, _ := l.claimsOf(key); n != 1 {
			t.Errorf("%d Claim calls for a slot refused with ErrBusy: want 1, not retried", n)
		}
		evs := sink.events(t)
		if late := where(evs, "slot.skipped", "slot", slotString(slot), "reason", string(history.ReasonLate)); len(late) != 1 {
			t.Errorf("%d late lines: want 1", len(late))
		}
		if nq := where(evs, "slot.skipped", "reason", string(history.ReasonNoQuorum)); len(nq) != 0 {
			t.Errorf("ErrBusy logged as no_quorum: %v", nq)
		}
	})
}

// TestAdmissionStop: slots still waiting for their turn when the replica
// stops are dropped as a stopping replica drops a slot it has not tried
// (nothing logged, no call), and Run returns once the calls in flight do.
func TestAdmissionStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sink, l := &logSink{}, newCountingLocker(2*time.Second)
		var specs []JobSpec
		for i := range 8 {
			sp := cronSpec(t, fmt.Sprintf("job%02d", i), "0 * * * * *", &recorder{now: time.Now})
			sp.Misfire = Misfire{Policy: MisfireSkip}
			specs = append(specs, sp)
		}
		stop := running(t, admissionScheduler(t, sink, l, 100*time.Millisecond, specs...))
		time.Sleep(time.Until(bubbleStart.Add(60*time.Second + 500*time.Millisecond)))
		stop()

		slot := bubbleStart.Add(60 * time.Second)
		evs := sink.events(t)
		calls := 0
		for _, sp := range specs {
			n, _ := l.claimsOf(history.SlotKey(sp.Name, slot))
			calls += n
			if late := where(evs, "slot.skipped", "job", sp.Name, "reason", string(history.ReasonLate)); len(late) != 0 {
				t.Errorf("%s: late lines at shutdown: %v", sp.Name, late)
			}
		}
		if calls != 4 {
			t.Errorf("%d Claim calls: want the 4 admitted before the stop, none for the slots waiting", calls)
		}
	})
}

// TestAdmissionOrder: the waiting calls are served in deadline (due)
// order whatever order they came in, each when a call in flight ends; one
// whose answer would come after its deadline is shed when its turn comes,
// and a full queue sheds a newcomer it could not serve in time at once.
func TestAdmissionOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ad := newAdmission(4)
		ad.max, ad.limit, ad.service = 1, 1, 100*time.Millisecond
		now := time.Now()
		w := func(deadline time.Duration) *admitWaiter { return &admitWaiter{deadline: now.Add(deadline)} }
		outcome := func(ds []admitted) string {
			s := ""
			for _, d := range ds {
				s += fmt.Sprintf("%v:%d ", d.w.deadline.Sub(now), d.o)
			}
			return s
		}
		if got := outcome(ad.enter(w(time.Second), now)); got != "1s:0 " {
			t.Fatalf("first call: %s, want admitted", got)
		}
		for _, d := range []time.Duration{3 * time.Second, 2 * time.Second, 500 * time.Millisecond} {
			if got := ad.enter(w(d), now); len(got) != 0 {
				t.Fatalf("call due in %v: %s, want it queued", d, outcome(got))
			}
		}
		if got := outcome(ad.enter(w(250*time.Millisecond), now)); got != "250ms:1 " {
			t.Errorf("a call behind three others, 100 ms each, due in 250 ms: %s, want shed at once", got)
		}
		time.Sleep(100 * time.Millisecond)
		if got := outcome(ad.done(time.Now(), 100*time.Millisecond, admitAnswered)); got != "500ms:0 " {
			t.Errorf("first turn: %s, want the 500 ms one", got)
		}
		time.Sleep(100 * time.Millisecond)
		got := outcome(ad.done(time.Now(), 100*time.Millisecond, admitAnswered))
		time.Sleep(100 * time.Millisecond)
		got += outcome(ad.done(time.Now(), 100*time.Millisecond, admitAnswered))
		if got != "2s:0 3s:0 " {
			t.Errorf("next turns: %s, want 2s then 3s", got)
		}
		ad.enter(w(5*time.Second), time.Now())
		ad.enter(w(700*time.Millisecond), time.Now()) // at 300 ms: predicted at 600 ms, but its turn comes at 650
		time.Sleep(350 * time.Millisecond)
		if got := outcome(ad.done(time.Now(), 100*time.Millisecond, admitAnswered)); got != "700ms:1 5s:0 " {
			t.Errorf("after the deadline passed: %s, want the 700 ms one shed, then the 5 s one", got)
		}
	})
}

// TestAdmissionLimit: claims the transport did not send for the
// replica's own overload (ErrBusy) cut the limit, once for the calls
// that fail together, never below an eighth of MaxInFlight; a missing
// majority does not (a node's fault, or a burst's op_timeouts); answers
// grow it back.
func TestAdmissionLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ad := newAdmission(64)
		now := time.Now()
		for range 40 {
			ad.enter(&admitWaiter{deadline: now.Add(time.Hour)}, now)
		}
		ad.done(now, 0, admitBusy)
		ad.done(now, 0, admitBusy)
		if math.Abs(ad.limit-64*admitCut) > 1e-9 {
			t.Fatalf("limit %v after two calls refused together, want one cut to %v", ad.limit, 64*admitCut)
		}
		time.Sleep(time.Second)
		ad.done(time.Now(), 10*time.Millisecond, overloaded(&locking.QuorumError{Op: "acquire", Need: 2}))
		if want := 64*admitCut + admitGrow/(64*admitCut); math.Abs(ad.limit-want) > 1e-9 {
			t.Fatalf("limit %v after a missing majority, want it grown to %v as after any answer", ad.limit, want)
		}
		for range 30 {
			time.Sleep(time.Second)
			ad.done(time.Now(), 0, overloaded(fmt.Errorf("x: %w", locking.ErrBusy)))
		}
		if ad.limit != 8 {
			t.Fatalf("limit %v after many cuts, want the floor 8", ad.limit)
		}
		time.Sleep(2 * time.Second)
		ad.done(time.Now(), 10*time.Millisecond, admitAnswered)
		if ad.limit != 9 {
			t.Errorf("limit %v after an answer with no cut for a second, want 9", ad.limit)
		}
	})
}

// BenchmarkShedSlot: what a slot shed before any call costs this replica
// (its attempt's exit and its slot.skipped late line, JSON at info), to
// compare with a run slot's CPU per replica (TestScale: about 130 µs at
// 2,000 jobs, 3 × 3).
func BenchmarkShedSlot(b *testing.B) {
	sp := cronSpec(b, "shed", "0 * * * * *", &recorder{now: time.Now})
	sp.Misfire = Misfire{Policy: MisfireSkip}
	s, err := New(Config{Replica: "r0", Locker: locking.NewLocal(locking.Options{Replica: "local"}),
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), LockTTL: 30 * time.Second,
		MaxClockSkew: 2 * time.Second, Jobs: []JobSpec{sp}})
	if err != nil {
		b.Fatal(err)
	}
	j, _ := s.job("shed")
	t := time.Now().Truncate(time.Minute)
	b.ReportAllocs()
	for b.Loop() {
		s.attempts.shed(j, t)
	}
}

// fakeAdmitted records the slots admission starts and sheds.
type fakeAdmitted struct {
	mu      sync.Mutex
	started []time.Time
	dropped []time.Time // shed
}

func (f *fakeAdmitted) attemptSlotWith(j *job, t time.Time, o origin, caller context.Context, tk *ticket) (*history.Entry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.started = append(f.started, t)
	return nil, nil
}

func (f *fakeAdmitted) shed(j *job, t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dropped = append(f.dropped, t)
}

// TestAdmissionAloneStartsAndSheds: admission built over a fake attempt
// pipeline. A fresh slot's attempt starts at once, holding its admission
// (given back when the attempt leaves its ticket unused); a slot whose
// freshness passed is shed through the attempt's exit, without a start.
func TestAdmissionAloneStartsAndSheds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newEnv(t)
		e := testEngine(t, Config{Replica: "r1", Locker: env.locker, Jobs: []JobSpec{everySecond(t, "tick", &recorder{now: time.Now})}})
		f := &fakeAdmitted{}
		ad := newAdmissionOf(e, f)
		j, _ := e.job("tick")
		fresh := time.Now().Truncate(time.Second)
		ad.fireSlot(j, fresh)
		ad.fireSlot(j, fresh.Add(-time.Hour))
		e.wg.Wait()
		if len(f.started) != 1 || !f.started[0].Equal(fresh) || len(f.dropped) != 1 {
			t.Errorf("started %v, shed %v: want the fresh slot started, the stale one shed", f.started, f.dropped)
		}
		if ad.busy() {
			t.Error("admission still busy after the attempt gave its unused ticket back")
		}
	})
}
