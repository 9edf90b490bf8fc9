package lockingtest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/driver"
)

// A pause refuses every Claim in its family until it ends — by itself, at
// Until, or by a resume — and never a plain Acquire; the newest write wins.
func testPause(t *testing.T, l locking.Locker) {
	fam := family(t)
	slot := func(n int) locking.Key { return locking.Key{Family: fam, Name: "slot:" + string(rune('0'+n))} }

	p, err := l.ReadPause(ctx(t), fam)
	require.NoError(t, err)
	require.False(t, p.Paused, "never paused")

	until := time.Now().Add(400 * time.Millisecond)
	p, err = l.SetPause(ctx(t), fam, locking.Pause{Paused: true, Until: until, By: "ops", Reason: "maintenance"})
	require.NoError(t, err)
	require.True(t, p.Paused)
	require.Positive(t, p.Version)
	got, err := l.ReadPause(ctx(t), fam)
	require.NoError(t, err)
	require.Equal(t, "maintenance", got.Reason)
	require.Equal(t, "ops", got.By)
	require.Equal(t, until.UnixMilli(), got.Until.UnixMilli())

	_, err = l.Claim(ctx(t), slot(1), time.Second)
	var pe *locking.PausedError
	require.ErrorAs(t, err, &pe)
	require.ErrorIs(t, err, locking.ErrPaused)
	require.Equal(t, "maintenance", pe.Pause.Reason)
	// Nothing of the refused claim is left: other families and plain
	// leases are not paused.
	other, err := l.Claim(ctx(t), locking.Key{Family: fam + "-other", Name: "slot:1"}, time.Second)
	require.NoError(t, err)
	require.NoError(t, other.End(ctx(t), locking.Ending{}).Err)
	run, err := l.Acquire(ctx(t), locking.Key{Family: fam, Name: "run"}, time.Second)
	require.NoError(t, err, "a plain lease (a manual run) is not paused")
	require.NoError(t, run.End(ctx(t), locking.Ending{}).Err)

	time.Sleep(time.Until(until) + 50*time.Millisecond) // the pause ends by itself
	a, err := l.Claim(ctx(t), slot(1), time.Second)
	require.NoError(t, err, "the refused claim left nothing behind, and the pause ended")
	require.NoError(t, a.End(ctx(t), locking.Ending{DoneTTL: time.Minute, Note: "succeeded"}).Err)

	_, err = l.SetPause(ctx(t), fam, locking.Pause{Paused: true, By: "ops"}) // no end
	require.NoError(t, err)
	_, err = l.Claim(ctx(t), slot(2), time.Second)
	require.ErrorIs(t, err, locking.ErrPaused)
	r, err := l.SetPause(ctx(t), fam, locking.Pause{Paused: false, By: "ops"})
	require.NoError(t, err)
	require.False(t, r.Paused)
	b, err := l.Claim(ctx(t), slot(2), time.Second)
	require.NoError(t, err, "resumed")
	require.NoError(t, b.End(ctx(t), locking.Ending{}).Err)
}

// A pause written while a run holds a slot's claim does not make that
// claim a paused one: a second claim of the slot is refused with the
// *PausedError and, as its Refusal, the *HeldError of the run going on
// (whose work began before the pause: the caller tells by Pause.Covers).
// Once the run's lease expired unended, a claim that takes it over is
// granted despite the pause (Grant.Abandoned): settling a dead run's
// slot starts no work, and left to the pause's end it would keep the
// slot without an outcome. A fresh slot is still refused.
func testPauseAfterTheClaim(t *testing.T, l locking.Locker) {
	fam := family(t)
	slot := func(n int) locking.Key { return locking.Key{Family: fam, Name: "slot:" + string(rune('0'+n))} }
	const ttl = 300 * time.Millisecond
	run, err := l.Claim(ctx(t), slot(1), ttl)
	require.NoError(t, err)
	_, err = l.SetPause(ctx(t), fam, locking.Pause{Paused: true, By: "ops"})
	require.NoError(t, err)

	_, err = l.Claim(ctx(t), slot(1), time.Second)
	var pe *locking.PausedError
	require.ErrorAs(t, err, &pe)
	var he *locking.HeldError
	require.ErrorAs(t, pe.Refusal, &he, "the refusal of the run's claim goes with the pause")
	require.False(t, he.Done)

	time.Sleep(ttl + 100*time.Millisecond) // the run's replica died: its lease expired
	settler, err := l.Claim(ctx(t), slot(1), time.Second)
	require.NoError(t, err, "taking a dead run's claim over is not refused by the pause")
	ab := settler.Grant().Abandoned
	require.NotNil(t, ab)
	require.Equal(t, run.Grant().ID, ab.ID)
	require.NoError(t, settler.End(ctx(t), locking.Ending{DoneTTL: time.Minute, Note: "missed"}).Err)

	_, err = l.Claim(ctx(t), slot(2), time.Second)
	require.ErrorIs(t, err, locking.ErrPaused, "a fresh slot is still paused")
}

// A pause or resume keeps the pauses that ended in the register (bounded
// by driver.MaxPastPauses), so that work due during a pause is known as
// paused after it ended; a reader of the value's older form would still
// read the current pause.
func testPausePast(t *testing.T, l locking.Locker) {
	fam := family(t)
	first, err := l.SetPause(ctx(t), fam, locking.Pause{Paused: true, By: "ops", Reason: "migration"})
	require.NoError(t, err)
	resumed, err := l.SetPause(ctx(t), fam, locking.Pause{Paused: false, By: "ops"})
	require.NoError(t, err)
	got, err := l.ReadPause(ctx(t), fam)
	require.NoError(t, err)
	require.False(t, got.Paused)
	require.Equal(t, []locking.PauseSpan{{From: first.Since(), To: resumed.Since()}}, got.Past,
		"the pause that the resume ended")
	require.True(t, got.PausedAt(first.Since()), "work due when the pause was written was paused")
	require.False(t, got.PausedAt(resumed.Since()), "work due at the resume was not")
	require.False(t, got.PausedAt(first.Since().Add(-time.Millisecond)))

	// A pause that ended by itself ends its span at Until.
	second, err := l.SetPause(ctx(t), fam, locking.Pause{Paused: true, Until: time.Now().Add(10 * time.Millisecond), By: "ops", Reason: "a|b"})
	require.NoError(t, err)
	time.Sleep(30 * time.Millisecond)
	_, err = l.SetPause(ctx(t), fam, locking.Pause{Paused: false, By: "ops"})
	require.NoError(t, err)
	got, err = l.ReadPause(ctx(t), fam)
	require.NoError(t, err)
	require.Len(t, got.Past, 2)
	require.Equal(t, locking.PauseSpan{From: second.Since(), To: second.Until.Truncate(time.Millisecond)}, got.Past[1])

	// Many pauses later, the newest MaxPastPauses are kept.
	for range driver.MaxPastPauses {
		_, err = l.SetPause(ctx(t), fam, locking.Pause{Paused: true, By: "ops"})
		require.NoError(t, err)
		_, err = l.SetPause(ctx(t), fam, locking.Pause{Paused: false, By: "ops"})
		require.NoError(t, err)
	}
	got, err = l.ReadPause(ctx(t), fam)
	require.NoError(t, err)
	require.Len(t, got.Past, driver.MaxPastPauses)
	require.False(t, got.PausedAt(first.Since()), "the oldest spans are dropped")
	require.Equal(t, "", got.Reason)
}
