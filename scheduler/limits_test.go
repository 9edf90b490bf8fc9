package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/locking"
)

// Library callers get the checks the command makes, with the same texts:
// a job name that would break the stores' hash tag, ceilings on the
// settings that size done markers, and a bound on Next.
func TestNewValidatesLikeTheCommand(t *testing.T) {
	locker := locking.NewLocal(locking.Options{Replica: "r1"})
	sched, err := ParseSchedule("* * * * * *", time.UTC)
	require.NoError(t, err)
	job := func(name string) JobSpec {
		return JobSpec{Name: name, Spec: "* * * * * *", Schedule: sched, Job: nopJob{}, Enabled: true}
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"brace in the name", Config{Jobs: []JobSpec{job("}evil")}},
			`scheduler: job "}evil": name: must match [a-z0-9][a-z0-9._-]{0,62} (lower case, digits, '.', '_', '-'; at most 63)`},
		{"empty name", Config{Jobs: []JobSpec{job("")}}, `scheduler: job "": name: required`},
		{"deadline ceiling", Config{Jobs: []JobSpec{func() JobSpec {
			j := job("a")
			j.Misfire = Misfire{Policy: MisfireRunOnce, Deadline: 25 * time.Hour}
			return j
		}()}}, `scheduler: job "a": misfire.deadline: must be at most 24h0m0s (run_once done markers live that long), got 25h0m0s`},
		{"skew ceiling", Config{MaxClockSkew: 2 * time.Minute},
			`scheduler: MaxClockSkew: must be at most 1m0s (done markers live about twice as long), got 2m0s`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Locker = locker
			_, err := New(tc.cfg)
			require.EqualError(t, err, tc.want)
		})
	}

	s, err := New(Config{Locker: locker, Jobs: []JobSpec{job("a")}})
	require.NoError(t, err)
	_, err = s.Next("a", time.Now(), 1<<40)
	require.EqualError(t, err, "scheduler: Next: n must be between 1 and 10000, got 1099511627776")
	got, err := s.Next("a", time.Now(), 3)
	require.NoError(t, err)
	require.Len(t, got, 3)
}

type nopJob struct{}

func (nopJob) Run(context.Context, jobs.Run) error { return nil }
