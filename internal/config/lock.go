package config

import (
	"time"

	"github.com/slotlock/slotlock/scheduler"
)

// Lock configures leases.
type Lock struct {
	TTL          time.Duration `yaml:"ttl" redact:"show"`
	MaxClockSkew time.Duration `yaml:"max_clock_skew" redact:"show"`
}

func defaultLock() Lock {
	return Lock{TTL: scheduler.DefaultLockTTL, MaxClockSkew: scheduler.DefaultMaxClockSkew}
}

func (l *loader) validateLock(c *Config) {
	positive(l, "lock.ttl", c.Lock.TTL)
	atMost(l, "lock.ttl", c.Lock.TTL, MaxLockTTL, "a replica that dies holding a lease keeps its job locked this long")
	if fe, bad := fieldErrors(scheduler.Config{MaxClockSkew: c.Lock.MaxClockSkew}.Validate())["MaxClockSkew"]; bad {
		l.add("lock.max_clock_skew", fe.Err)
	}
	if c.Lock.TTL > 0 && c.Redis.OpTimeout > 0 && c.Lock.TTL <= 3*c.Redis.OpTimeout {
		l.addf("lock.ttl", "must be greater than 3 x redis.op_timeout (%s), got %s", 3*c.Redis.OpTimeout, c.Lock.TTL)
	}
	if c.Lock.TTL > 0 && c.Lock.MaxClockSkew >= c.Lock.TTL {
		l.addf("lock.max_clock_skew", "must be less than lock.ttl (%s), got %s", c.Lock.TTL, c.Lock.MaxClockSkew)
	}
}
