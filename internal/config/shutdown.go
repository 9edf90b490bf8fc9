package config

import (
	"time"

	"github.com/slotlock/slotlock/scheduler"
)

// Shutdown configures the graceful stop on SIGTERM.
type Shutdown struct {
	Grace time.Duration `yaml:"grace" redact:"show"`
}

func defaultShutdown() Shutdown { return Shutdown{Grace: scheduler.DefaultShutdownGrace} }

func (l *loader) validateShutdown(c *Config) {
	notNegative(l, "shutdown.grace", c.Shutdown.Grace)
	atMost(l, "shutdown.grace", c.Shutdown.Grace, MaxShutdownGrace, "how long SIGTERM may wait for the runs")
}
