package config

import (
	"time"

	"github.com/slotlock/slotlock/locking/redlock"
	"github.com/slotlock/slotlock/scheduler"
)

// This file is the one place where settings become the scheduler's and the
// lock layer's: one line per setting.

// SchedulerConfig returns the scheduler's settings and jobs (JobSpecs). The
// caller adds what is not configuration: Replica, Locker, Clock, Logger and
// Metrics.
func (c *Config) SchedulerConfig() scheduler.Config {
	return scheduler.Config{
		LockTTL:        c.Lock.TTL,
		MaxClockSkew:   c.Lock.MaxClockSkew,
		ShutdownGrace:  c.Shutdown.Grace,
		HistoryKeep:    historyKeep(c.History.Keep),
		ReconcileEvery: reconcileEvery(c.History),
		ReconcileAfter: c.History.ReconcileAfter,
		Spread:         spread(c.Redis),
		Jobs:           c.JobSpecs(),
		Secrets:        c.secrets(),
	}
}

// secrets are the configured values no error text may show: the Redis
// password, the webhooks' URLs and header values.
func (c *Config) secrets() []string {
	out := c.notifySecrets()
	if c.Redis.Password != "" {
		out = append(out, c.Redis.Password)
	}
	return out
}

// spread is the scheduler's Spread: its default with Redis nodes, none
// with in-process locks — one replica, nobody to race.
func spread(r Redis) time.Duration {
	if len(r.Nodes) == 0 {
		return -1
	}
	return 0
}

// LockingConfig returns the Redlock settings. Password holds the password
// from redis.password, SLOTLOCK_REDIS__PASSWORD or redis.password_file.
// With redis.auth: entra the caller must set StreamingCredentials (or
// CredentialsProvider) to an Entra ID token provider (locking/entraauth, as
// the cli does); this conversion leaves both nil, and validation has
// already refused a password with entra.
func (c *Config) LockingConfig() redlock.Config {
	nodes := make([]string, len(c.Redis.Nodes))
	for i, n := range c.Redis.Nodes {
		nodes[i] = n.Addr
	}
	return redlock.Config{
		Nodes:       nodes,
		Username:    c.Redis.Username,
		Password:    c.Redis.Password,
		TLS:         c.Redis.TLS,
		KeyPrefix:   c.Redis.KeyPrefix,
		DialTimeout: c.Redis.DialTimeout,
		OpTimeout:   c.Redis.OpTimeout,
	}
}

// JobSpecs returns the jobs for the scheduler, in file order, disabled ones
// included (the scheduler does not fire them; `slotlock trigger` may still
// run them). Every spec carries the parsed schedule, its location and the
// plugin's job as Load built them.
func (c *Config) JobSpecs() []scheduler.JobSpec {
	specs := make([]scheduler.JobSpec, len(c.Jobs))
	for i, j := range c.Jobs {
		specs[i] = scheduler.JobSpec{
			Name:           j.Name,
			Spec:           j.Spec,
			Schedule:       j.Schedule,
			Location:       j.Location,
			Calendar:       j.ResolvedCalendar,
			Plugin:         j.Plugin,
			Job:            j.Runner,
			Disabled:       !j.Enabled,
			Timeout:        j.Timeout,
			Overlap:        j.Overlap,
			Misfire:        scheduler.Misfire{Policy: j.Misfire.Policy, Deadline: j.Misfire.Deadline, Max: j.Misfire.Max},
			Retry:          scheduler.Retry{Max: j.Retry.Max, Backoff: j.Retry.Backoff},
			Jitter:         j.Jitter,
			PauseOnFailure: j.PauseOnFailure,
			Notify:         notifyRules(j.Notify),
			Group:          j.ResolvedGroup,
		}
	}
	return specs
}

// historyKeep maps history.keep (0: keep none) to the scheduler's setting
// (0: its default; negative: none).
func historyKeep(n int) int {
	if n == 0 {
		return -1
	}
	return n
}
