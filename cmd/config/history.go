package config

import "github.com/slotlock/slotlock/scheduler"

// History configures the slot history kept in the lock stores.
type History struct {
	Keep int `yaml:"keep" redact:"show"`
}

func defaultHistory() History { return History{Keep: scheduler.DefaultHistoryKeep} }

func (l *loader) validateHistory(c *Config) {
	if c.History.Keep < 0 || c.History.Keep > maxHistoryKeep {
		l.addf("history.keep", "must be between 0 and %d, got %d", maxHistoryKeep, c.History.Keep)
	}
}

// maxHistoryKeep bounds the entries kept per job (each is a few hundred
// bytes on every lock store).
const maxHistoryKeep = 100_000
