package scheduler

import (
	"context"
	"strings"
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
		return JobSpec{Name: name, Spec: "* * * * * *", Schedule: sched, Job: nopJob{}}
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

// Validate reports every problem at once, each naming the job and the
// field; zero values stand for their defaults and are no problem.
func TestValidateReportsEveryProblem(t *testing.T) {
	sched, err := ParseSchedule("@every 10s", time.UTC)
	require.NoError(t, err)
	require.NoError(t, JobSpec{Name: "ok", Schedule: sched, Job: nopJob{}}.Validate(), "zero values are the defaults")

	bad := JobSpec{Name: "Bad", Schedule: sched, Job: nopJob{}, Overlap: "sometimes", Jitter: 11 * time.Second,
		Misfire: Misfire{Policy: MisfireRunAll, Deadline: -time.Minute, Max: 1001}, Retry: Retry{Max: -1}, Timeout: -time.Second}
	err = bad.Validate()
	require.ElementsMatch(t, []string{
		`scheduler: job "Bad": name: must match [a-z0-9][a-z0-9._-]{0,62} (lower case, digits, '.', '_', '-'; at most 63)`,
		`scheduler: job "Bad": overlap "sometimes": want forbid, allow or replace`,
		`scheduler: job "Bad": misfire.deadline: must be positive, got -1m0s`,
		`scheduler: job "Bad": misfire.max: must be between 1 and 1000, got 1001`,
		`scheduler: job "Bad": timeout: must not be negative, got -1s`,
		`scheduler: job "Bad": retry.max: must not be negative, got -1`,
		`scheduler: job "Bad": jitter: must be at most the schedule's shortest interval between two slots (10s), got 11s`,
	}, strings.Split(err.Error(), "\n"))
	var fe *FieldError
	require.ErrorAs(t, err, &fe)
	require.True(t, fe.InJob)
	require.Equal(t, "Bad", fe.Job)
	require.Equal(t, "name", fe.Field)

	ok := JobSpec{Name: "a", Schedule: sched, Job: nopJob{}, PauseOnFailure: 5}
	err = Config{MaxClockSkew: -time.Second, HistoryKeep: 3, Jobs: []JobSpec{ok, ok}}.Validate()
	require.ElementsMatch(t, []string{
		`scheduler: Locker: required`,
		`scheduler: MaxClockSkew: must not be negative, got -1s`,
		`scheduler: job "a": pause_on_failure: 5 needs history.keep >= it (3)`,
		`scheduler: job "a": pause_on_failure: 5 needs history.keep >= it (3)`,
		`scheduler: job "a": name: configured twice`,
	}, strings.Split(err.Error(), "\n"))
}

// A spec needs no parsed Schedule: New parses Spec in Location, and the
// zero values are the defaults (enabled among them); a Spec that does not
// parse is a problem of the schedule field.
func TestNewParsesSpec(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	spec := JobSpec{Name: "nightly", Spec: "0 0 3 * * *", Location: ny, Job: nopJob{}}
	require.NoError(t, spec.Validate())
	s, err := New(Config{Locker: locking.NewLocal(locking.Options{Replica: "r1"}), Jobs: []JobSpec{spec}})
	require.NoError(t, err)
	from := time.Date(2026, 7, 1, 12, 0, 0, 0, ny)
	got, err := s.Next("nightly", from, 2)
	require.NoError(t, err)
	require.Equal(t, []time.Time{time.Date(2026, 7, 2, 3, 0, 0, 0, ny), time.Date(2026, 7, 3, 3, 0, 0, 0, ny)}, got)
	require.True(t, spec.Describe().Enabled, "the zero value is enabled")
	require.NotNil(t, spec.Describe().Schedule, "the read model gets the parsed schedule too")

	bad := JobSpec{Name: "nightly", Spec: "0 61 * * * *", Job: nopJob{}}
	require.EqualError(t, bad.Validate(), `scheduler: job "nightly": schedule "0 61 * * * *": minute 61 out of range [0,59]`)
	_, err = New(Config{Locker: locking.NewLocal(locking.Options{Replica: "r1"}), Jobs: []JobSpec{bad}})
	require.EqualError(t, err, `scheduler: job "nightly": schedule "0 61 * * * *": minute 61 out of range [0,59]`)
	require.EqualError(t, JobSpec{Name: "none", Job: nopJob{}}.Validate(),
		`scheduler: job "none": schedule: required: Spec (the schedule's text) or Schedule`)
}
