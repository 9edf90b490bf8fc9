package scheduler

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// fakeAround stands for every component an attempt calls but the lock
// layer: outcomes (its ends accepted at once), settlement, control, the
// misfire policy, the outage and the fleet. It records what it is told.
type fakeAround struct {
	fakeEnds
	fakeOutcomes
	fakeSettler
	mu       sync.Mutex
	handled  []pendingEnd
	late     []lateRange
	quorum   int
	running  map[string]bool
	startedN int
}

func (f *fakeAround) endHandled(p pendingEnd, j *job, t time.Time) {
	f.mu.Lock()
	f.handled = append(f.handled, p)
	f.mu.Unlock()
	f.endLeaseThen(p)
}
func (f *fakeAround) settleAbandoned(j *job, t time.Time, lease *locking.Lease) {}
func (f *fakeAround) notePause(j *job, p locking.Pause)                         {}
func (f *fakeAround) pauseOnFailure(j *job)                                     {}
func (f *fakeAround) handle(j *job, late lateRange) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.late = append(f.late, late)
}
func (f *fakeAround) outageRecovered(j *job, t time.Time) (time.Time, string) { return time.Time{}, "" }
func (f *fakeAround) quorumSeen() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.quorum++
}
func (f *fakeAround) noteOutage(j *job, t time.Time) {}
func (f *fakeAround) flushPending(job string)        {}
func (f *fakeAround) runStarted(r history.RunInfo) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.running[r.RunID] = true
	f.startedN++
}
func (f *fakeAround) runEnded(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.running, id)
}

// attemptsAlone is the attempt pipeline over fakes of every component it
// calls, its claims taken on env's locker; its job "tick" allows overlap
// (no job lease) and runs rec.
func attemptsAlone(t *testing.T, env *env, rec *recorder) (*attempts, *fakeAround) {
	spec := everySecond(t, "tick", rec)
	spec.Overlap = OverlapAllow
	e := testEngine(t, Config{Replica: "r1", Locker: env.locker, Logger: env.sink.logger("r1"), Metrics: env.metrics,
		Jobs: []JobSpec{spec}})
	f := &fakeAround{running: map[string]bool{}}
	ap := &attempts{engine: e, locks: &fakeClaims{locker: env.locker}, outcomes: f, settlement: f, control: f,
		misfire: f, outage: f, fleet: f}
	return ap, f
}

// TestAttemptsAloneWinAndRun: a scheduled slot, won and succeeded, goes
// claim → steps → run → exit: the run is listed while it goes on, and the
// exit ends the claim through outcomes with the succeeded entry, once,
// as a handled slot (the job's record moves with it).
func TestAttemptsAloneWinAndRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newEnv(t)
		rec := &recorder{now: time.Now}
		ap, f := attemptsAlone(t, env, rec)
		j, _ := ap.job("tick")
		slot := time.Now().Add(time.Second).Truncate(time.Second)
		time.Sleep(time.Until(slot))
		h, err := ap.attemptSlot(j, slot, originScheduled, nil)
		if err != nil || h == nil || h.Outcome != history.OutcomeSucceeded {
			t.Fatalf("attempt: %+v, %v; want a succeeded entry", h, err)
		}
		if len(rec.all()) != 1 || f.startedN != 1 || len(f.running) != 0 || f.quorum == 0 {
			t.Errorf("%d runs, %d listed, %d still listed, quorum seen %d times", len(rec.all()), f.startedN, len(f.running), f.quorum)
		}
		if len(f.handled) != 1 || f.handled[0].entry == nil || len(f.late) != 0 {
			t.Fatalf("ends %+v, late %v: want one handled end with its entry", f.handled, f.late)
		}
		if e, ok := history.ParseEntry(*f.handled[0].entry); !ok || e.Outcome != history.OutcomeSucceeded || e.Slot != slotString(slot) {
			t.Errorf("entry %+v, want the slot succeeded", e)
		}
	})
}

// TestAttemptsAloneHeld: a slot whose claim another replica holds is not
// run: slot.skipped reason held, nothing ended.
func TestAttemptsAloneHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := newEnv(t)
		rec := &recorder{now: time.Now}
		ap, f := attemptsAlone(t, env, rec)
		j, _ := ap.job("tick")
		slot := time.Now().Add(time.Second).Truncate(time.Second)
		if _, err := env.locker.Claim(context.Background(), history.SlotKey("tick", slot), time.Minute); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Until(slot))
		if h, _ := ap.attemptSlot(j, slot, originScheduled, nil); h != nil {
			t.Fatalf("ran a held slot: %+v", h)
		}
		if len(rec.all()) != 0 || len(f.ends) != 0 {
			t.Errorf("%d runs, ends %+v: want none", len(rec.all()), f.ends)
		}
		if n := len(where(env.sink.events(t), evSlotSkipped, "reason", string(history.ReasonHeld))); n != 1 {
			t.Errorf("%d slot.skipped held lines, want 1", n)
		}
	})
}

// refusingClaims refuses every claim with err.
type refusingClaims struct {
	fakeClaims
	err func(locking.Key) error
}

func (r *refusingClaims) acquire(job string, key locking.Key, p retryPolicy) (*locking.Lease, error) {
	return nil, r.err(key)
}

// TestAttemptsAloneRefusalsThatProveNoMajority: a refusal by a done
// marker or by a claim found on a minority can come from one store while
// the others are silent, so it does not end an outage (the misfire
// policy would take the outage's latest missed slot to be the one noted
// so far); a plain refusal, a majority's answer, does.
func TestAttemptsAloneRefusalsThatProveNoMajority(t *testing.T) {
	for _, tc := range []struct {
		name   string
		held   locking.HeldError
		reason history.Reason
		quorum int
	}{
		{"done", locking.HeldError{Holder: "r2", Done: true, Note: "succeeded"}, history.ReasonDone, 0},
		{"claimed", locking.HeldError{Holder: "r2", Claimed: true}, history.ReasonClaimed, 0},
		{"held", locking.HeldError{Holder: "r2"}, history.ReasonHeld, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				env := newEnv(t)
				rec := &recorder{now: time.Now}
				ap, f := attemptsAlone(t, env, rec)
				ap.locks = &refusingClaims{err: func(k locking.Key) error {
					he := tc.held
					he.Key = k
					return &he
				}}
				j, _ := ap.job("tick")
				slot := time.Now().Add(time.Second).Truncate(time.Second)
				time.Sleep(time.Until(slot))
				if h, _ := ap.attemptSlot(j, slot, originScheduled, nil); h != nil || len(rec.all()) != 0 {
					t.Fatalf("ran a refused slot: %+v", h)
				}
				if f.quorum != tc.quorum {
					t.Errorf("outage seen over %d times, want %d", f.quorum, tc.quorum)
				}
				if n := len(where(env.sink.events(t), evSlotSkipped, "reason", string(tc.reason))); n != 1 {
					t.Errorf("%d slot.skipped %s lines, want 1", n, tc.reason)
				}
			})
		})
	}
}
