package scheduler

import (
	"context"
	"regexp"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/scheduler/history"
)

// An embedded scheduler (no Config.DefinitionsHash) has a definitions hash
// of its own jobs: the same for the same declarations whatever the Job's
// code, another when a declaration changes, the defaults written out or
// not; the heartbeat carries it, so `slotlock status` shows it; a given
// hash is kept; a Reload without one computes the new set's.
func TestDefinitionsHashOfAnEmbeddedScheduler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		noop := jobs.Func(func(context.Context, jobs.Run) error { return nil })
		other := jobs.Func(func(context.Context, jobs.Run) error { return context.Canceled })
		spec := func(job jobs.Job, change func(*JobSpec)) JobSpec {
			s := JobSpec{Name: "report", Spec: "*/5 * * * * *", Location: time.UTC, Plugin: "func", Job: job, Timeout: time.Minute}
			if change != nil {
				change(&s)
			}
			return s
		}
		hashOf := func(specs ...JobSpec) string {
			t.Helper()
			s := e.scheduler("r1", nil, specs...)
			return s.DefinitionsHash()
		}
		base := hashOf(spec(noop, nil))
		require.Regexp(t, regexp.MustCompile(`^[0-9a-f]{12}$`), base)
		require.Equal(t, base, hashOf(spec(other, nil)), "the Job's code is not part of the hash")
		require.Equal(t, base, hashOf(spec(noop, func(s *JobSpec) { s.Overlap, s.Misfire.Policy = OverlapForbid, MisfireSkip })),
			"written-out defaults change the hash")
		for name, change := range map[string]func(*JobSpec){
			"schedule": func(s *JobSpec) { s.Spec = "*/10 * * * * *" },
			"zone":     func(s *JobSpec) { s.Location, _ = time.LoadLocation("Europe/Berlin") },
			"timeout":  func(s *JobSpec) { s.Timeout = time.Hour },
			"overlap":  func(s *JobSpec) { s.Overlap = OverlapAllow },
			"retry":    func(s *JobSpec) { s.Retry.Max = 2 },
			"disabled": func(s *JobSpec) { s.Disabled = true },
			"name":     func(s *JobSpec) { s.Name = "report2" },
		} {
			require.NotEqual(t, base, hashOf(spec(noop, change)), "changing the %s keeps the hash", name)
		}
		require.NotEqual(t, base, hashOf(spec(noop, nil), spec(noop, func(s *JobSpec) { s.Name = "second" })), "a second job keeps the hash")

		cfg := Config{Replica: "r2", Locker: e.locker, Logger: e.sink.logger("r2"), DefinitionsHash: "given",
			Jobs: []JobSpec{spec(noop, nil)}}
		given, err := New(cfg)
		require.NoError(t, err)
		require.Equal(t, "given", given.DefinitionsHash())

		s := e.scheduler("r1", nil, spec(noop, nil))
		stop := running(t, s)
		time.Sleep(3 * time.Second)
		st, err := history.ReadStatus(context.Background(), e.locker, nil, s.DefinitionsHash(), time.Now())
		require.NoError(t, err)
		require.Len(t, st.Replicas, 1)
		require.Equal(t, base, st.Replicas[0].DefinitionsHash, "the heartbeat does not carry the computed hash")
		require.False(t, st.Replicas[0].Differs)

		_, err = s.Reload(context.Background(), "", []JobSpec{spec(noop, func(s *JobSpec) { s.Spec = "*/10 * * * * *" })})
		require.NoError(t, err)
		require.Equal(t, hashOf(spec(noop, func(s *JobSpec) { s.Spec = "*/10 * * * * *" })), s.DefinitionsHash())
		stop()
	})
}
