package lockingtest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
)

// A pause refuses every Claim in its family until it ends — by itself, at
// Until, or by a resume — and never a plain Acquire; the newest write wins.
func testPause(t *testing.T, l locking.Backend) {
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

// A pause or resume keeps the pauses that ended in the register (bounded
// by locking.MaxPastPauses), so that work due during a pause is known as
// paused after it ended; a reader of the value's older form would still
// read the current pause.
func testPausePast(t *testing.T, l locking.Backend) {
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
	for range locking.MaxPastPauses {
		_, err = l.SetPause(ctx(t), fam, locking.Pause{Paused: true, By: "ops"})
		require.NoError(t, err)
		_, err = l.SetPause(ctx(t), fam, locking.Pause{Paused: false, By: "ops"})
		require.NoError(t, err)
	}
	got, err = l.ReadPause(ctx(t), fam)
	require.NoError(t, err)
	require.Len(t, got.Past, locking.MaxPastPauses)
	require.False(t, got.PausedAt(first.Since()), "the oldest spans are dropped")
	require.Equal(t, "", got.Reason)
}
