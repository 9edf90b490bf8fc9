package config

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking"
	"github.com/slotlock/slotlock/locking/redlock"
	"github.com/slotlock/slotlock/scheduler"
)

func TestLockingConfig(t *testing.T) {
	cfg, err := Load("testdata/configs/full.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.LockingConfig()
	want := redlock.Config{
		Nodes:    []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"},
		Username: "slotlock", Password: "hunter2", TLS: true, KeyPrefix: "prod",
		DialTimeout: 500 * time.Millisecond, OpTimeout: 50 * time.Millisecond,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("LockingConfig =\n%+v\nwant\n%+v", got, want)
	}
}

func TestJobSpecs(t *testing.T) {
	cfg, err := Load("testdata/configs/full.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	specs := cfg.JobSpecs()
	if len(specs) != 3 {
		t.Fatalf("%d specs", len(specs))
	}
	s := specs[0]
	if s.Name != "nightly-report" || s.Spec != "30 2 * * *" || s.Plugin != "exec" || s.Disabled ||
		s.Timeout != 20*time.Minute || s.Overlap != scheduler.OverlapForbid ||
		s.Misfire != (scheduler.Misfire{Policy: scheduler.MisfireRunOnce, Deadline: 2 * time.Hour, Max: scheduler.DefaultMisfireMax}) ||
		s.Retry != (scheduler.Retry{Max: 2, Backoff: 30 * time.Second}) || s.Jitter != 10*time.Minute {
		t.Fatalf("spec 0 = %+v", s)
	}
	if s.Schedule != cfg.Jobs[0].Schedule || s.Location != cfg.Jobs[0].Location || s.Job != cfg.Jobs[0].Runner || s.Job == nil {
		t.Fatal("spec 0 does not carry the built schedule, location and job")
	}
	if specs[1].Overlap != scheduler.OverlapAllow || specs[1].Jitter != 0 || !specs[2].Disabled {
		t.Fatalf("specs 1/2: %+v %+v", specs[1], specs[2])
	}
	// The conversions build a scheduler the scheduler itself accepts.
	sc := cfg.SchedulerConfig()
	if sc.LockTTL != 20*time.Second || sc.MaxClockSkew != time.Second || sc.ShutdownGrace != 10*time.Second || len(sc.Jobs) != 3 {
		t.Fatalf("SchedulerConfig = %+v", sc)
	}
	if len(cfg.Redis.Nodes) > 0 && sc.Spread != 0 {
		t.Fatalf("Spread = %v with Redis nodes, want the scheduler's default", sc.Spread)
	}
	if local := mustLoad(t, "jobs: []\n").SchedulerConfig(); local.Spread >= 0 {
		t.Fatalf("Spread = %v with in-process locks, want none (negative)", local.Spread)
	}
	sc.Locker = locking.NewLocal(locking.Options{})
	if _, err := scheduler.New(sc); err != nil {
		t.Fatalf("scheduler.New rejects the converted config: %v", err)
	}
}

// The scheduler is given the Redis password to scrub from the error texts
// it logs.
func TestSchedulerConfigCarriesTheSecrets(t *testing.T) {
	cfg := mustLoad(t, "redis:\n  nodes: [{addr: \"a:6380\"}]\n  password: p4ssw0rd-x\n  tls: true\n")
	require.Equal(t, []string{"p4ssw0rd-x"}, cfg.SchedulerConfig().Secrets)
	require.Empty(t, mustLoad(t, "log: {level: info}\n").SchedulerConfig().Secrets)
}
