package config

import (
	"time"

	"github.com/slotlock/slotlock/scheduler"
)

// History configures the slot history kept in the lock stores and the
// reconciler that accounts for every slot in it.
type History struct {
	Keep int `yaml:"keep" redact:"show"`
	// ReconcileEvery is how often one replica (elected through the locks)
	// looks for slots without an outcome; 0 turns it off on this replica.
	ReconcileEvery time.Duration `yaml:"reconcile_every" redact:"show"`
	// ReconcileAfter is how old a slot must be before it can be declared
	// missed (raised per job to cover lateness and misfire.deadline).
	ReconcileAfter time.Duration `yaml:"reconcile_after" redact:"show"`
}

func defaultHistory() History {
	return History{Keep: scheduler.DefaultHistoryKeep, ReconcileEvery: scheduler.DefaultReconcileEvery,
		ReconcileAfter: scheduler.DefaultReconcileAfter}
}

func (l *loader) validateHistory(c *Config) {
	h := c.History
	if h.Keep < 0 || h.Keep > maxHistoryKeep {
		l.addf("history.keep", "must be between 0 and %d, got %d", maxHistoryKeep, h.Keep)
	}
	if h.ReconcileEvery != 0 && (h.ReconcileEvery < time.Second || h.ReconcileEvery > time.Hour) {
		l.addf("history.reconcile_every", "must be 0 (off) or between 1s and 1h, got %s", h.ReconcileEvery)
	}
	if h.ReconcileAfter < time.Second || h.ReconcileAfter > maxReconcileAfter {
		l.addf("history.reconcile_after", "must be between 1s and %s, got %s", maxReconcileAfter, h.ReconcileAfter)
	}
}

// maxHistoryKeep bounds the entries kept per job (each is a few hundred
// bytes on every lock store).
const maxHistoryKeep = 100_000

// maxReconcileAfter: the fleet's heartbeats and outages, which give a
// missed slot its reason, are kept for a day.
const maxReconcileAfter = 12 * time.Hour

// reconcileEvery is the scheduler's setting for reconcile_every: off (-1)
// when 0 or when no history is kept (there is nothing to reconcile).
func reconcileEvery(h History) time.Duration {
	if h.ReconcileEvery == 0 || h.Keep == 0 {
		return -1
	}
	return h.ReconcileEvery
}
