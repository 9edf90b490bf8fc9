package lockingtest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
)

// A claim whose holder stops renewing (it died while working) keeps the
// key: the next Claim takes over its lease, learns who abandoned it, and
// nobody else can take it while the taker reports; its done marker then
// closes the key.
func testClaimAbandoned(t *testing.T, l locking.Locker) {
	key := locking.Key{Family: family(t), Name: "slot:1"}
	dead, err := l.Claim(ctx(t), key, 300*time.Millisecond)
	require.NoError(t, err)
	require.Nil(t, dead.Grant().Abandoned)
	require.Len(t, dead.Grant().ID, 16)

	_, err = l.Claim(ctx(t), key, time.Second)
	held := wantHeld(t, err, false)
	require.Equal(t, dead.Grant().Holder, held.Holder)

	time.Sleep(400 * time.Millisecond) // the lease expires, the claim stays
	taker, err := l.Claim(ctx(t), key, 5*time.Second)
	require.NoError(t, err, "Claim over an abandoned claim")
	ab := taker.Grant().Abandoned
	require.NotNil(t, ab, "the taker must learn that the claim was abandoned")
	require.Equal(t, locking.Abandoned{Key: key, Holder: dead.Grant().Holder, ID: dead.Grant().ID, Majority: true}, *ab)
	require.Greater(t, taker.Token(), dead.Token())

	_, err = l.Claim(ctx(t), key, time.Second)
	wantHeld(t, err, false) // the taker's lease is live

	require.NoError(t, taker.End(ctx(t), locking.Ending{DoneTTL: time.Minute, Note: "abandoned"}).Err)
	_, err = l.Claim(ctx(t), key, time.Second)
	held = wantHeld(t, err, true)
	require.Equal(t, "abandoned", held.Note)
	// The dead holder, back, can neither extend nor end it.
	require.ErrorIs(t, dead.Extend(ctx(t)), locking.ErrLockLost)
}

// Released before its work began, a claim leaves nothing: the key can be
// claimed afresh.
func testClaimRelease(t *testing.T, l locking.Locker) {
	key := locking.Key{Family: family(t), Name: "slot:1"}
	a, err := l.Claim(ctx(t), key, 5*time.Second)
	require.NoError(t, err)
	require.NoError(t, a.End(ctx(t), locking.Ending{}).Err)
	b, err := l.Claim(ctx(t), key, 5*time.Second)
	require.NoError(t, err)
	require.Nil(t, b.Grant().Abandoned)
	require.Greater(t, b.Token(), a.Token())
	require.NoError(t, b.End(ctx(t), locking.Ending{DoneTTL: time.Minute, Note: "succeeded"}).Err)
	_, err = l.Claim(ctx(t), key, time.Second)
	held := wantHeld(t, err, true)
	require.Equal(t, "succeeded", held.Note)
}

// A kept claim is never taken for abandoned, however long it runs.
func testClaimKept(t *testing.T, l locking.Locker) {
	key := locking.Key{Family: family(t), Name: "slot:1"}
	a, err := l.Claim(ctx(t), key, 300*time.Millisecond)
	require.NoError(t, err)
	kctx := a.Keep(ctx(t))
	deadline := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(deadline) {
		_, err := l.Claim(ctx(t), key, time.Second)
		held := wantHeld(t, err, false)
		require.Equal(t, a.Grant().Holder, held.Holder)
		other, err := l.Claim(ctx(t), locking.Key{Family: key.Family, Name: "other"}, time.Second)
		require.NoError(t, err)
		require.Nil(t, other.Grant().Orphan, "a kept claim reported as an orphan")
		require.NoError(t, other.End(ctx(t), locking.Ending{}).Err)
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, kctx.Err(), "the kept claim was lost")
	require.NoError(t, a.End(ctx(t), locking.Ending{DoneTTL: time.Minute, Note: "succeeded"}).Err)
	_, err = l.Claim(ctx(t), key, time.Second)
	wantHeld(t, err, true)
}

// A claim of another key whose lease expired is pointed out by the next
// successful Claim in the family, until someone takes it over and ends it.
func testClaimOrphan(t *testing.T, l locking.Locker) {
	fam := family(t)
	dead, err := l.Claim(ctx(t), locking.Key{Family: fam, Name: "slot:1"}, 300*time.Millisecond)
	require.NoError(t, err)
	time.Sleep(400 * time.Millisecond)

	next, err := l.Claim(ctx(t), locking.Key{Family: fam, Name: "slot:2"}, 5*time.Second)
	require.NoError(t, err)
	require.Nil(t, next.Grant().Abandoned)
	orphan := next.Grant().Orphan
	require.NotNil(t, orphan, "the abandoned claim of slot:1 was not pointed out")
	require.Equal(t, locking.Abandoned{Key: dead.Grant().Key, Holder: dead.Grant().Holder, ID: dead.Grant().ID}, *orphan)
	require.NoError(t, next.End(ctx(t), locking.Ending{DoneTTL: time.Minute, Note: "succeeded"}).Err)

	taker, err := l.Claim(ctx(t), orphan.Key, 5*time.Second)
	require.NoError(t, err)
	require.NotNil(t, taker.Grant().Abandoned)
	require.NoError(t, taker.End(ctx(t), locking.Ending{DoneTTL: time.Minute, Note: "abandoned"}).Err)

	last, err := l.Claim(ctx(t), locking.Key{Family: fam, Name: "slot:3"}, 5*time.Second)
	require.NoError(t, err)
	require.Nil(t, last.Grant().Orphan, "a settled claim is still pointed out")
	require.NoError(t, last.End(ctx(t), locking.Ending{}).Err)
}

// Concurrent acquisitions of different keys of one family never share a
// fencing token.
func testTokensUnique(t *testing.T, l locking.Locker) {
	fam := family(t)
	const workers, each = 8, 6
	var mu sync.Mutex
	seen := map[uint64]string{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				key := locking.Key{Family: fam, Name: fmt.Sprintf("k%d-%d", w, i)}
				lease, err := l.Acquire(ctx(t), key, 5*time.Second)
				if errors.Is(err, locking.ErrSplitVote) || errors.Is(err, locking.ErrNoQuorum) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				if other, dup := seen[lease.Token()]; dup {
					errs <- fmt.Errorf("token %d handed to %s and %s", lease.Token(), other, key.Name)
				}
				seen[lease.Token()] = key.Name
				mu.Unlock()
				if err := lease.End(ctx(t), locking.Ending{}).Err; err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	require.NotEmpty(t, seen)
}

// Keys a store cannot hold safely are refused before any store is asked.
func testBadKeys(t *testing.T, l locking.Locker) {
	for _, k := range []locking.Key{
		{Family: "", Name: "x"},
		{Family: "}job", Name: "x"},
		{Family: "a{b", Name: "x"},
		{Family: "job", Name: ""},
		{Family: "job", Name: "fence"},
		{Family: "job", Name: "claims"},
		{Family: "job", Name: "lives"},
		{Family: "job", Name: "pause"},
		{Family: "job", Name: "log"},
	} {
		_, err := l.Acquire(ctx(t), k, time.Second)
		require.Error(t, err, "key %+v", k)
		require.NotErrorIs(t, err, locking.ErrNotAcquired)
		require.ErrorContains(t, err, "locking: key")
	}
}

// A claim whose holder declared its work begun (Start) and renewed once
// is taken over as started; one whose holder renewed without Start (or
// never renewed) is taken over as not confirmed: the stores cannot tell
// whether its work began.
func testClaimStarted(t *testing.T, l locking.Locker) {
	fam := family(t)
	for _, start := range []bool{true, false} {
		key := locking.Key{Family: fam, Name: fmt.Sprintf("slot:%v", start)}
		dead, err := l.Claim(ctx(t), key, 300*time.Millisecond)
		require.NoError(t, err)
		if start {
			dead.Start()
		}
		require.NoError(t, dead.Extend(ctx(t)))
		time.Sleep(400 * time.Millisecond)
		taker, err := l.Claim(ctx(t), key, 5*time.Second)
		require.NoError(t, err)
		require.NotNil(t, taker.Grant().Abandoned)
		require.Equal(t, start, taker.Grant().Abandoned.Started, "started as confirmed")
		require.NoError(t, taker.End(ctx(t), locking.Ending{DoneTTL: time.Minute, Note: "abandoned"}).Err)
	}
	// A started claim still ends as its own: its release and its done
	// marker recognise it.
	key := locking.Key{Family: fam, Name: "slot:ended"}
	a, err := l.Claim(ctx(t), key, 5*time.Second)
	require.NoError(t, err)
	a.Start()
	require.NoError(t, a.Extend(ctx(t)))
	require.NoError(t, a.End(ctx(t), locking.Ending{DoneTTL: time.Minute, Note: "succeeded"}).Err)
	keys, err := l.ReadClaims(ctx(t), fam)
	require.NoError(t, err)
	require.NotContains(t, keys, key)
}
