package scheduler

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// Overlap replace in synctest bubbles, over one in-process locker shared
// by the replicas (replace_redis_test.go runs it over real Redis nodes).

// slotJob runs each slot for d(slot) (a manual run: d(zero time)), or
// until its context ends, and records every run with the context's cause.
type slotJob struct {
	mu   sync.Mutex
	runs []record
	d    func(slot time.Time) time.Duration
}

func (j *slotJob) Run(ctx context.Context, run jobs.Run) error {
	start := time.Now()
	var err error
	t := time.NewTimer(j.d(run.Slot))
	select {
	case <-t.C:
	case <-ctx.Done():
		err = context.Cause(ctx)
	}
	t.Stop()
	j.mu.Lock()
	j.runs = append(j.runs, record{Run: run, Start: start, End: time.Now(), Err: err, Cause: context.Cause(ctx)})
	j.mu.Unlock()
	return err
}

func (j *slotJob) all() []record {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.runs)
}

// runsBySlot returns the runs of each slot (unix seconds; manual runs under 0).
func runsBySlot(runs []record) map[int64][]record {
	m := map[int64][]record{}
	for _, r := range runs {
		k := int64(0)
		if !r.Run.Manual {
			k = r.Run.Slot.Unix() - bubbleStart.Unix()
		}
		m[k] = append(m[k], r)
	}
	return m
}

func replaceSpec(t testing.TB, name, spec string, j jobs.Job) JobSpec {
	t.Helper()
	sched, err := ParseSchedule(spec, time.UTC)
	require.NoError(t, err)
	return JobSpec{Name: name, Spec: spec, Schedule: sched, Job: j, Plugin: "test", Overlap: OverlapReplace}
}

// logTime returns the time of a log line.
func logTime(t testing.TB, e event) time.Time {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, e.str("time"))
	require.NoError(t, err)
	return ts
}

// historyOf returns the history entry of slot sec of job.
func historyOf(t testing.TB, l locking.Locker, job string, sec int) history.Entry {
	t.Helper()
	h, err := history.ReadEntries(context.Background(), l, job, bubbleStart, 100)
	require.NoError(t, err)
	for _, e := range h {
		if e.Slot == slotAt(sec) {
			return e
		}
	}
	t.Fatalf("no history entry for slot %s: %+v", slotAt(sec), h)
	return history.Entry{}
}

// TestReplaceCancelsTheRunOnAnotherReplica: a replica whose clock is 0.8 s
// behind runs slot 3 of a replace job, which would take a minute; a
// replica on time wins slot 6: the old run is canceled on its replica
// (cause ErrReplaced naming slot 6, run.canceled reason replaced with
// by_slot, history canceled/replaced) within a poll of slot 6's request,
// and slot 6 starts on the other replica once it returned, with a higher
// token. Every slot runs once.
func TestReplaceCancelsTheRunOnAnotherReplica(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		job := &slotJob{d: func(sl time.Time) time.Duration {
			if sl.Equal(bubbleStart.Add(3 * time.Second)) {
				return time.Minute
			}
			return 500 * time.Millisecond
		}}
		spec := replaceSpec(t, "job", "*/3 * * * * *", job)
		stopSlow := running(t, e.scheduler("slow", newJumpClock(-800*time.Millisecond), spec))
		time.Sleep(4 * time.Second) // slot 3 runs on slow since 3.8 s
		stopFast := running(t, e.scheduler("fast", nil, spec))
		time.Sleep(6 * time.Second)
		stopFast()
		stopSlow()

		runs := runsBySlot(job.all())
		for _, sec := range []int64{0, 3, 6, 9} {
			require.Len(t, runs[sec], 1, "slot %d: %v", sec, runs)
		}
		old, next := runs[3][0], runs[6][0]
		require.Equal(t, "slow", old.Run.Replica)
		require.Equal(t, "fast", next.Run.Replica)
		var re *ReplacedError
		require.ErrorAs(t, old.Cause, &re)
		require.ErrorIs(t, old.Cause, ErrReplaced)
		require.Equal(t, bubbleStart.Add(6*time.Second), re.By)
		slot6 := bubbleStart.Add(6 * time.Second)
		require.Less(t, old.End.Sub(slot6), 500*time.Millisecond, "the old run is canceled within a poll of the request")
		require.False(t, next.Start.Before(old.End), "slot 6 started at %v, before the old run ended at %v", next.Start, old.End)
		require.Less(t, next.Start.Sub(old.End), 300*time.Millisecond, "slot 6 starts as soon as the job lease is free")
		require.Greater(t, next.Run.FencingToken, old.Run.FencingToken)

		evs := e.sink.events(t)
		canceled := where(evs, "run.canceled")
		require.Len(t, canceled, 1, "%v", canceled)
		c := canceled[0]
		require.Equal(t, slotAt(3), c.str("slot"))
		require.Equal(t, "replaced", c.str("reason"))
		require.Equal(t, slotAt(6), c.str("by_slot"))
		require.Equal(t, "slow", c.str("replica"))
		require.Equal(t, old.Run.RunID, c.str("run_id"))
		require.Empty(t, where(evs, "slot.skipped", "reason", "overlap"))
		require.Empty(t, where(evs, "slot.skipped", "reason", "replaced"))

		h := historyOf(t, e.locker, "job", 3)
		require.Equal(t, history.OutcomeCanceled, h.Outcome)
		require.Equal(t, history.Reason("replaced"), h.Reason)
		require.Equal(t, slotAt(6), h.BySlot)
		require.Equal(t, "slow", h.Replica)
		require.Equal(t, old.Run.FencingToken, h.Token)
		h6 := historyOf(t, e.locker, "job", 6)
		require.Equal(t, history.OutcomeSucceeded, h6.Outcome)
		require.Empty(t, h6.BySlot)
	})
}

// TestReplaceWaitsForADeadHoldersLease: the job lease is held by a replica
// that died (nobody renews it, nobody reads the request): the slot starts
// once the lease has expired, not before, with a higher token.
func TestReplaceWaitsForADeadHoldersLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{d: 200 * time.Millisecond, now: time.Now}
		stop := running(t, e.scheduler("r1", nil, replaceSpec(t, "job", "*/10 * * * * *", rec)))
		time.Sleep(8 * time.Second)
		dead, err := e.locker.Acquire(context.Background(), history.RunKey("job"), 6*time.Second)
		require.NoError(t, err)
		expires := time.Now().Add(6 * time.Second)
		time.Sleep(8 * time.Second)
		stop()

		runs := rec.all()
		require.Len(t, runs, 1)
		r := runs[0]
		require.Equal(t, bubbleStart.Add(10*time.Second), r.Run.Slot)
		require.False(t, r.Start.Before(expires), "started at %v, the dead holder's lease expired at %v", r.Start, expires)
		require.Less(t, r.Start.Sub(expires), 300*time.Millisecond)
		require.Greater(t, r.Run.FencingToken, dead.Token())
		evs := e.sink.events(t)
		require.Empty(t, where(evs, "run.canceled"))
		require.Empty(t, where(evs, "slot.skipped", "slot", slotAt(10)))
	})
}

// TestReplaceWaitIsBounded: the job lease is held and renewed by a run
// that ignores the request (its replica alive, its plugin deaf): the slot
// waits ReplaceWait (lock.ttl + L), its claim kept alive meanwhile although
// that is longer than its ttl, and is then skipped with reason overlap.
func TestReplaceWaitIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{d: 200 * time.Millisecond, now: time.Now}
		s, err := New(Config{Replica: "r1", Locker: e.locker, Logger: e.sink.logger("r1"), Metrics: e.metrics,
			LockTTL: 2 * time.Second, MaxClockSkew: 2 * time.Second,
			Jobs: []JobSpec{replaceSpec(t, "job", "*/10 * * * * *", rec)}})
		require.NoError(t, err)
		require.Equal(t, 5*time.Second, s.ReplaceWait())
		deaf, err := e.locker.Acquire(context.Background(), history.RunKey("job"), 2*time.Second)
		require.NoError(t, err)
		deaf.Keep(context.Background())
		stop := running(t, s)
		time.Sleep(13 * time.Second) // slot 10 waits; its claim's ttl (2s) is long past
		_, err = e.locker.Claim(context.Background(), history.SlotKey("job", bubbleStart.Add(10*time.Second)), time.Second)
		var he *locking.HeldError
		require.ErrorAs(t, err, &he, "the waiting slot's claim must still be held")
		require.False(t, he.Done)
		time.Sleep(3 * time.Second)
		stop()
		require.NoError(t, deaf.End(context.Background(), locking.Ending{}).Err)

		require.Empty(t, rec.all())
		skips := where(e.sink.events(t), "slot.skipped", "slot", slotAt(10))
		require.Len(t, skips, 1, "%v", skips)
		require.Equal(t, "overlap", skips[0].str("reason"))
		waited := logTime(t, skips[0]).Sub(bubbleStart.Add(10 * time.Second))
		require.GreaterOrEqual(t, waited, 5*time.Second)
		require.Less(t, waited, 5500*time.Millisecond)
		h := historyOf(t, e.locker, "job", 10)
		require.Equal(t, history.OutcomeSkipped, h.Outcome)
		require.Equal(t, history.ReasonOverlap, h.Reason)
	})
}

// TestReplaceSupersedesAWaitingSlot: slot 1 waits for a job lease held
// elsewhere; slot 2 fires and asks too: slot 1 gives up (slot.skipped
// reason replaced, by_slot slot 2; history skipped/replaced) and never
// runs, not even after slot 2; slot 2 runs once the lease is free.
func TestReplaceSupersedesAWaitingSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rec := &recorder{d: 300 * time.Millisecond, now: time.Now}
		other, err := e.locker.Acquire(context.Background(), history.RunKey("job"), 30*time.Second)
		require.NoError(t, err)
		stop := running(t, e.scheduler("r1", nil, replaceSpec(t, "job", "* * * * * *", rec)))
		time.Sleep(2500 * time.Millisecond)
		freed := time.Now()
		require.NoError(t, other.End(context.Background(), locking.Ending{}).Err)
		time.Sleep(2 * time.Second)
		stop()

		runs := rec.all()
		per := map[int64]int{}
		for i, r := range runs {
			per[r.Run.Slot.Unix()-bubbleStart.Unix()]++
			if i > 0 {
				require.Greater(t, r.Run.FencingToken, runs[i-1].Run.FencingToken)
				require.True(t, r.Run.Slot.After(runs[i-1].Run.Slot), "slots in order")
			}
		}
		require.Equal(t, map[int64]int{2: 1, 3: 1, 4: 1}, per)
		require.False(t, runs[0].Start.Before(freed))
		evs := e.sink.events(t)
		skips := where(evs, "slot.skipped", "slot", slotAt(1))
		require.Len(t, skips, 1, "%v", skips)
		require.Equal(t, "replaced", skips[0].str("reason"))
		require.Equal(t, slotAt(2), skips[0].str("by_slot"))
		require.Equal(t, "INFO", skips[0].str("level"))
		require.Less(t, logTime(t, skips[0]).Sub(bubbleStart.Add(2*time.Second)), 500*time.Millisecond)
		require.Empty(t, where(evs, "run.canceled"))
		h := historyOf(t, e.locker, "job", 1)
		require.Equal(t, history.OutcomeSkipped, h.Outcome)
		require.Equal(t, history.ReasonReplaced, h.Reason)
		require.Equal(t, slotAt(2), h.BySlot)
	})
}

// manualAndSlots runs replica r1 with replace job "job", a slot every
// 10 s that runs for slotRun and manual runs that run a minute.
func manualAndSlots(t *testing.T, slotRun time.Duration) (*env, *slotJob, *Scheduler, func()) {
	e := newEnv(t)
	job := &slotJob{d: func(sl time.Time) time.Duration {
		if sl.IsZero() {
			return time.Minute
		}
		return slotRun
	}}
	s := e.scheduler("r1", nil, replaceSpec(t, "job", "*/10 * * * * *", job))
	return e, job, s, running(t, s)
}

// TestReplaceManualRun: a manual run of a replace job holds the job lease
// and is replaced by the next slot due after its start; a manual trigger
// while a run holds the lease is refused (overlap), as under forbid.
func TestReplaceManualRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, job, s, stop := manualAndSlots(t, 2*time.Second)
		time.Sleep(2 * time.Second)
		err := s.Trigger(context.Background(), "job") // returns once slot 10 replaced it
		require.ErrorIs(t, err, ErrRunFailed)
		time.Sleep(500 * time.Millisecond) // slot 10 runs until 12 s
		err = s.Trigger(context.Background(), "job")
		var he *locking.HeldError
		require.ErrorAs(t, err, &he, "a manual run does not replace")
		time.Sleep(2 * time.Second)
		stop()

		runs := runsBySlot(job.all())
		require.Len(t, runs[0], 1)
		require.Len(t, runs[10], 1)
		manual, next := runs[0][0], runs[10][0]
		require.True(t, manual.Run.Manual)
		var re *ReplacedError
		require.True(t, errors.As(manual.Cause, &re), "cause %v", manual.Cause)
		require.Equal(t, bubbleStart.Add(10*time.Second), re.By)
		require.False(t, next.Start.Before(manual.End))
		require.Greater(t, next.Run.FencingToken, manual.Run.FencingToken)
		require.Nil(t, next.Err)
		evs := e.sink.events(t)
		c := where(evs, "run.canceled", "slot", "manual")
		require.Len(t, c, 1)
		require.Equal(t, "replaced", c[0].str("reason"))
		require.Equal(t, slotAt(10), c[0].str("by_slot"))
		require.Len(t, where(evs, "slot.skipped", "slot", "manual", "reason", "overlap"), 1)
	})
}

// TestReplaceManualRunAfterASlotThatRan: a slot due less than
// max_clock_skew before a manual run started replaces it only while it
// may be waiting for the job lease; one whose own run had ended before
// the manual run took the lease does not (the simulation, seed 255790,
// canceled a trigger so). The next slot due after the start replaces it.
func TestReplaceManualRunAfterASlotThatRan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, job, s, stop := manualAndSlots(t, 300*time.Millisecond)
		time.Sleep(10*time.Second + 500*time.Millisecond) // slot 10 ran from 10 s to 10.3 s
		err := s.Trigger(context.Background(), "job")     // returns once slot 20 replaced it
		require.ErrorIs(t, err, ErrRunFailed)
		time.Sleep(time.Second)
		stop()

		runs := runsBySlot(job.all())
		require.Len(t, runs[10], 1)
		require.Len(t, runs[0], 1)
		manual := runs[0][0]
		var re *ReplacedError
		require.True(t, errors.As(manual.Cause, &re), "cause %v", manual.Cause)
		require.Equal(t, bubbleStart.Add(20*time.Second), re.By, "replaced by slot 20, not by slot 10, which had run")
		require.False(t, runs[10][0].End.After(manual.Start))
	})
}
