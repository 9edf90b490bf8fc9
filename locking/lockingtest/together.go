package lockingtest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
)

// MarkDoneWith ends a claim and a job lease of its family in one step: the
// claim becomes its done marker (with its log entry), the job lease is
// free for the next run at once, a second call does nothing, and a job
// lease that is no longer ours is reported lost without touching the new
// holder's.
func testMarkDoneWith(t *testing.T, l locking.Locker) {
	fam := family(t)
	slot := locking.Key{Family: fam, Name: "slot:1"}
	run := locking.Key{Family: fam, Name: "run"}
	claim, err := l.Claim(ctx(t), slot, 5*time.Second)
	require.NoError(t, err)
	job := mustAcquire(t, l, run, 5*time.Second)
	kctx := job.Keep(ctx(t))

	entry := locking.LogEntry{Score: 1, Value: "slot 1 succeeded"}
	err, jobErr := claim.MarkDoneWith(ctx(t), job, time.Minute, "succeeded", &entry, 10)
	require.NoError(t, err)
	require.NoError(t, jobErr)
	require.Error(t, kctx.Err(), "the job lease's kept context ends with it")

	_, err = l.Claim(ctx(t), slot, time.Second)
	require.Equal(t, "succeeded", wantHeld(t, err, true).Note)
	log, err := l.ReadLog(ctx(t), fam, 0, 10)
	require.NoError(t, err)
	require.Equal(t, []locking.LogEntry{entry}, log)
	next := mustAcquire(t, l, run, 5*time.Second) // free at once
	require.Greater(t, next.Token(), job.Token())

	err, jobErr = claim.MarkDoneWith(ctx(t), job, time.Minute, "succeeded", &entry, 10)
	require.NoError(t, err, "a second end does nothing")
	require.NoError(t, jobErr, "a second end does nothing")
	_, err = l.Acquire(ctx(t), run, time.Second)
	wantHeld(t, err, false) // next still holds it

	// A job lease that expired and was taken by another: lost, and the
	// new holder keeps it; the claim is still marked done.
	claim2, err := l.Claim(ctx(t), locking.Key{Family: fam, Name: "slot:2"}, 5*time.Second)
	require.NoError(t, err)
	short, err := l.Acquire(ctx(t), locking.Key{Family: fam, Name: "run2"}, 200*time.Millisecond)
	require.NoError(t, err)
	time.Sleep(300 * time.Millisecond)
	taker := mustAcquire(t, l, locking.Key{Family: fam, Name: "run2"}, 5*time.Second)
	err, jobErr = claim2.MarkDoneWith(ctx(t), short, time.Minute, "succeeded", nil, 0)
	require.NoError(t, err)
	require.ErrorIs(t, jobErr, locking.ErrLockLost)
	_, err = l.Acquire(ctx(t), locking.Key{Family: fam, Name: "run2"}, time.Second)
	wantHeld(t, err, false)
	require.NoError(t, taker.Release(ctx(t)))
	require.NoError(t, next.Release(ctx(t)))
}
