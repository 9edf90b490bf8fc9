package scheduler

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/scheduler/history"
)

// The offset is a function of (job, slot, jitter) alone: the same on
// every call and in every time zone, in [0, jitter), whole milliseconds,
// and spread evenly over the range.
func TestJitterOffset(t *testing.T) {
	const jitter = 45 * time.Second
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)

	const n, buckets = 20_000, 10
	var counts [buckets]int
	var sum time.Duration
	for i := range n {
		slot := start.Add(time.Duration(i) * time.Second)
		off := JitterOffset("report", slot, jitter)
		require.Equal(t, off, JitterOffset("report", slot, jitter), "not deterministic")
		require.Equal(t, off, JitterOffset("report", slot.In(berlin), jitter), "depends on the slot's zone")
		require.True(t, off >= 0 && off < jitter, "offset %v outside [0, %v)", off, jitter)
		require.Zero(t, off%time.Millisecond, "offset %v is not whole milliseconds", off)
		counts[off*buckets/jitter]++
		sum += off
	}
	// Uniform: every tenth of the range gets 10% ± 1.5% of the slots
	// (about 7 standard deviations), the mean is near jitter/2.
	for b, c := range counts {
		require.InDelta(t, n/buckets, c, n*0.015, "bucket %d of %d: %d offsets", b, buckets, c)
	}
	require.InDelta(t, float64(jitter/2), float64(sum/n), float64(jitter/50), "mean offset")

	// Other jobs get other offsets for the same slot; no jitter, no offset.
	same := 0
	for i := range 1000 {
		slot := start.Add(time.Duration(i) * time.Minute)
		if JitterOffset("report", slot, jitter) == JitterOffset("backup", slot, jitter) {
			same++
		}
	}
	require.Less(t, same, 5, "two jobs share most offsets")
	require.Zero(t, JitterOffset("report", start, 0))
	require.Zero(t, JitterOffset("report", start, -time.Second))
	require.Zero(t, JitterOffset("report", start, 999*time.Microsecond), "below a millisecond truncates to 0")
	// The formula is part of the fleet's contract (replicas of different
	// versions must agree): pin one value.
	require.Equal(t, JitterOffset("report", start, jitter), pinnedOffset, "the offset formula changed")
}

// pinnedOffset is JitterOffset("report", 2026-11-29T10:00:00Z, 45s).
const pinnedOffset = 5763 * time.Millisecond

func TestShortestInterval(t *testing.T) {
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		spec, zone string
		want       time.Duration
	}{
		{"@every 90s", "UTC", 90 * time.Second},
		{"* * * * * *", "UTC", time.Second},
		{"*/7 * * * * *", "UTC", 4 * time.Second}, // :56 -> :00
		{"0 0,50 * * * *", "Europe/Berlin", 10 * time.Minute},
		{"0 */7 * * * *", "UTC", 4 * time.Minute}, // :56 -> :00
		{"0 0 */5 * * *", "UTC", 4 * time.Hour},   // 20:00 -> 00:00
		{"0 0 0 1,31 * *", "UTC", 24 * time.Hour}, // 31st -> 1st
		{"0 */15 * * * *", "America/New_York", 15 * time.Minute},
		{"0 0 9 * * MON-FRI", "Europe/Berlin", 24 * time.Hour},
		{"@daily", "UTC", 24 * time.Hour},
		// Daylight saving time: the spring-forward day is 23 hours long.
		{"@daily", "America/New_York", 23 * time.Hour},
		// 02:30 does not exist on 8 March: it runs at 03:00 EDT, 23.5
		// hours after the 7th's and before the 9th's.
		{"30 2 * * *", "America/New_York", 23*time.Hour + 30*time.Minute},
		// Lord Howe moves 30 minutes: 01:45 -> (02:00 = 02:30) -> 02:45.
		{"0 45 * * * *", "Australia/Lord_Howe", 30 * time.Minute},
		{"0 0 0 1 1 *", "UTC", 365 * 24 * time.Hour},
	} {
		t.Run(tc.spec+" "+tc.zone, func(t *testing.T) {
			loc, err := time.LoadLocation(tc.zone)
			require.NoError(t, err)
			sched, err := ParseSchedule(tc.spec, loc)
			require.NoError(t, err)
			require.Equal(t, tc.want, ShortestInterval(sched, from))
		})
	}
	once := scheduleFunc(func(t time.Time) time.Time {
		if t.Before(from) {
			return from
		}
		return time.Time{}
	})
	require.Zero(t, ShortestInterval(once, from.Add(-time.Hour)), "a schedule with one slot has no interval")
}

type scheduleFunc func(time.Time) time.Time

func (f scheduleFunc) Next(t time.Time) time.Time { return f(t) }

// NextDue is the first slot due after t, lastDueBy the latest due at or
// before it: together they split the slots at t by due time.
func TestNextDueAndLastDueBy(t *testing.T) {
	sched, err := ParseSchedule("@every 10s", time.UTC)
	require.NoError(t, err)
	spec := JobSpec{Name: "j", Schedule: sched, Jitter: 10 * time.Second}
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		at := base.Add(time.Duration(rng.Int64N(int64(time.Hour))))
		slot, due := spec.NextDue(at)
		require.True(t, due.After(at) && due.Equal(spec.Due(slot)), "NextDue(%v) = %v due %v", at, slot, due)
		last := spec.lastDueBy(at)
		require.False(t, spec.Due(last).After(at), "lastDueBy(%v) = %v due %v", at, last, spec.Due(last))
		require.Equal(t, slot, sched.Next(last), "at %v: the slot after the last due (%v) is not the next due (%v)", at, last, slot)
	}
	// Without jitter both are the plain schedule.
	plain := JobSpec{Name: "j", Schedule: sched}
	slot, due := plain.NextDue(base)
	require.Equal(t, sched.Next(base), slot)
	require.Equal(t, slot, due)
	require.Equal(t, base, plain.lastDueBy(base))
}

// New refuses a negative jitter and one longer than the schedule's
// shortest interval, with the texts the command prints.
func TestNewValidatesJitter(t *testing.T) {
	locker := locking.NewLocal(locking.Options{Replica: "r1"})
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	spec := func(text string, loc *time.Location, jitter time.Duration) JobSpec {
		sched, err := ParseSchedule(text, loc)
		require.NoError(t, err)
		return JobSpec{Name: "a", Spec: text, Schedule: sched, Job: nopJob{}, Jitter: jitter}
	}
	for _, tc := range []struct {
		name string
		job  JobSpec
		want string
	}{
		{"negative", spec("@every 10s", time.UTC, -time.Second), `scheduler: job "a": jitter: must not be negative, got -1s`},
		{"above the interval", spec("@every 10s", time.UTC, 11*time.Second),
			`scheduler: job "a": jitter: must be at most the schedule's shortest interval between two slots (10s), got 11s`},
		{"daylight saving time", spec("@daily", ny, 23*time.Hour+time.Minute),
			`scheduler: job "a": jitter: must be at most the schedule's shortest interval between two slots (23h0m0s), got 23h1m0s`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(Config{Locker: locker, Jobs: []JobSpec{tc.job}})
			require.EqualError(t, err, tc.want)
		})
	}
	for _, ok := range []JobSpec{spec("@every 10s", time.UTC, 10*time.Second), spec("@daily", ny, 23*time.Hour),
		spec("@every 10s", time.UTC, 0)} {
		_, err := New(Config{Locker: locker, Jobs: []JobSpec{ok}})
		require.NoError(t, err, "jitter %v on %s", ok.Jitter, ok.Spec)
	}
}

// claimSpy records, per slot key, when its replica first claimed it, on
// the replica's clock.
type claimSpy struct {
	locking.Locker
	clock locking.Clock
	mu    sync.Mutex
	first map[string]time.Time
}

func newClaimSpy(l locking.Locker, clock locking.Clock) *claimSpy {
	return &claimSpy{Locker: l, clock: clock, first: map[string]time.Time{}}
}

func (c *claimSpy) Claim(ctx context.Context, key locking.Key, ttl time.Duration, opts ...locking.ClaimOption) (*locking.Lease, error) {
	c.mu.Lock()
	if _, ok := c.first[key.String()]; !ok {
		c.first[key.String()] = c.clock.Now()
	}
	c.mu.Unlock()
	return c.Locker.Claim(ctx, key, ttl, opts...)
}

// claimedAt is when the replica first claimed slot t of job, on its clock.
func (c *claimSpy) claimedAt(job string, t time.Time) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.first[history.SlotKey(job, t).String()]
	return at, ok
}

// jitterSpec is a job on spec with the given jitter.
func jitterSpec(t testing.TB, name, text string, jitter time.Duration, j *recorder) JobSpec {
	t.Helper()
	sched, err := ParseSchedule(text, time.UTC)
	require.NoError(t, err)
	return JobSpec{Name: name, Spec: text, Schedule: sched, Job: j, Jitter: jitter, Overlap: OverlapAllow}
}
