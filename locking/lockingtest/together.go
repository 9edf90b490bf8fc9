package lockingtest

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
)

// End of a claim with its job lease and its record, in one step: the
// claim becomes its done marker (with its log entry), the job lease is
// free for the next run at once, the record is raised (never lowered), a
// second End does nothing, and a job lease that is no longer ours is
// reported lost without touching the new holder's.
func testEndTogether(t *testing.T, l locking.Locker) {
	fam := family(t)
	slot := locking.Key{Family: fam, Name: "slot:1"}
	run := locking.Key{Family: fam, Name: "run"}
	claim, err := l.Claim(ctx(t), slot, 5*time.Second)
	require.NoError(t, err)
	job := mustAcquire(t, l, run, 5*time.Second)
	kctx := job.Keep(ctx(t))

	entry := locking.LogEntry{Score: 1, Value: "slot 1 succeeded"}
	last := locking.Key{Family: fam, Name: "last"}
	require.NoError(t, l.AdvanceRecord(ctx(t), last, 5))
	done := locking.Ending{DoneTTL: time.Minute, Note: "succeeded", Entry: &entry, Keep: 10, Also: job, Record: last, RecordValue: 7}
	require.Equal(t, locking.Released{}, claim.End(ctx(t), done))
	require.Error(t, kctx.Err(), "the job lease's kept context ends with it")
	rec, err := l.ReadRecord(ctx(t), last)
	require.NoError(t, err)
	require.Equal(t, int64(7), rec)

	_, err = l.Claim(ctx(t), slot, time.Second)
	require.Equal(t, "succeeded", wantHeld(t, err, true).Note)
	log, err := l.ReadLog(ctx(t), fam, 0, 10)
	require.NoError(t, err)
	require.Equal(t, []locking.LogEntry{entry}, log)
	next := mustAcquire(t, l, run, 5*time.Second) // free at once
	require.Greater(t, next.Token(), job.Token())

	done.RecordValue = 6
	require.Equal(t, locking.Released{}, claim.End(ctx(t), done), "a second end does nothing")
	_, err = l.Acquire(ctx(t), run, time.Second)
	wantHeld(t, err, false) // next still holds it
	rec, err = l.ReadRecord(ctx(t), last)
	require.NoError(t, err)
	require.Equal(t, int64(7), rec, "a record is never lowered")

	// A job lease that expired and was taken by another: lost, and the
	// new holder keeps it; the claim is still marked done.
	claim2, err := l.Claim(ctx(t), locking.Key{Family: fam, Name: "slot:2"}, 5*time.Second)
	require.NoError(t, err)
	short, err := l.Acquire(ctx(t), locking.Key{Family: fam, Name: "run2"}, 200*time.Millisecond)
	require.NoError(t, err)
	time.Sleep(300 * time.Millisecond)
	taker := mustAcquire(t, l, locking.Key{Family: fam, Name: "run2"}, 5*time.Second)
	res := claim2.End(ctx(t), locking.Ending{DoneTTL: time.Minute, Note: "succeeded", Also: short})
	require.NoError(t, res.Err)
	require.ErrorIs(t, res.Also, locking.ErrLockLost)
	require.NoError(t, res.Record)
	_, err = l.Acquire(ctx(t), locking.Key{Family: fam, Name: "run2"}, time.Second)
	wantHeld(t, err, false)
	require.NoError(t, taker.End(ctx(t), locking.Ending{}).Err)
	require.NoError(t, next.End(ctx(t), locking.Ending{}).Err)
}

// Claim With takes a claim and a job lease of its family in one step, with
// one token: only where the job lease is free and the claim is the
// caller's own; otherwise the claim is as Claim's and the job lease is
// left as it was.
func testClaimWith(t *testing.T, l locking.Locker) {
	fam := family(t)
	run := locking.Key{Family: fam, Name: "run"}
	slot := func(i int) locking.Key { return locking.Key{Family: fam, Name: fmt.Sprintf("slot:%d", i)} }

	// Free: both, one token; each refuses others; End frees both.
	c1, err := l.Claim(ctx(t), slot(1), 5*time.Second, locking.With(run))
	require.NoError(t, err)
	j1 := c1.Grant().Joined
	require.NotNil(t, j1, "the job lease is free: taken with the claim")
	require.Equal(t, c1.Token(), j1.Token())
	require.Equal(t, run, j1.Grant().Key)
	require.NotEqual(t, c1.Grant().ID, j1.Grant().ID)
	_, err = l.Acquire(ctx(t), run, time.Second)
	require.Equal(t, c1.Grant().Holder, wantHeld(t, err, false).Holder)
	_, err = l.Claim(ctx(t), slot(1), time.Second)
	wantHeld(t, err, false)
	require.NoError(t, j1.Extend(ctx(t)))

	// Job lease held: the claim alone; the holder keeps its lease.
	c2, err := l.Claim(ctx(t), slot(2), 5*time.Second, locking.With(run))
	require.NoError(t, err)
	require.Nil(t, c2.Grant().Joined, "the job lease is held: not taken")
	require.Greater(t, c2.Token(), c1.Token())
	require.NoError(t, j1.Extend(ctx(t)), "the holder's job lease is untouched")
	require.NoError(t, c2.End(ctx(t), locking.Ending{}).Err)

	require.Equal(t, locking.Released{}, c1.End(ctx(t), locking.Ending{DoneTTL: time.Minute, Note: "succeeded", Also: j1}))
	// Done: refused, and the job lease stays free.
	_, err = l.Claim(ctx(t), slot(1), time.Second, locking.With(run))
	wantHeld(t, err, true)
	free := mustAcquire(t, l, run, time.Second)
	require.NoError(t, free.End(ctx(t), locking.Ending{}).Err)

	// A claim taken over (abandoned): not the caller's own work, so no
	// job lease with it.
	dead, err := l.Claim(ctx(t), slot(3), 300*time.Millisecond)
	require.NoError(t, err)
	time.Sleep(400 * time.Millisecond)
	taker, err := l.Claim(ctx(t), slot(3), 5*time.Second, locking.With(run))
	require.NoError(t, err)
	require.NotNil(t, taker.Grant().Abandoned)
	require.Equal(t, dead.Grant().ID, taker.Grant().Abandoned.ID)
	require.Nil(t, taker.Grant().Joined)
	require.NoError(t, taker.End(ctx(t), locking.Ending{DoneTTL: time.Minute, Note: "abandoned"}).Err)
	free = mustAcquire(t, l, run, time.Second)
	require.NoError(t, free.End(ctx(t), locking.Ending{}).Err)

	_, err = l.Claim(ctx(t), slot(4), time.Second, locking.With(slot(4)))
	require.Error(t, err, "the same key twice")
	_, err = l.Claim(ctx(t), slot(4), time.Second, locking.With(locking.Key{Family: fam + "x", Name: "run"}))
	require.Error(t, err, "a key of another family")
}
