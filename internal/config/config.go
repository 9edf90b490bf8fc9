// Package config loads slotlock's configuration: built-in defaults, then the
// YAML file, then SLOTLOCK_* environment overrides, decoded strictly and
// validated as a whole. Load either returns a Config in which every job has
// its schedule parsed, its time zone loaded and its plugin built, or an
// Errors value that lists every problem found, each naming its key path.
//
// The schema is the contract's (docs/configuration.md); the Go
// field names follow the YAML keys.
//
// Each setting is defined once, in the file of its section (log.go,
// http.go, redis.go, lock.go, shutdown.go, job.go): a field whose `yaml`
// tag names the key and whose `redact` tag says how the configuration dump
// shows it ("show", "secret", or "params" for a plugin's params), its
// default in the section's default function (taken from the package that
// owns the setting where there is one), and its validation rule. The
// defaults koanf merges under the file and the redacted dump are derived
// from the tags (tree.go); conversion to the scheduler's and the lock
// layer's settings is in convert.go. Adding a setting touches its section
// file, convert.go and the schema in docs/configuration.md, which a test holds to the
// struct.
package config

import (
	_ "time/tzdata" // time zones work in containers without /usr/share/zoneinfo
)

// Config is the effective, validated configuration.
type Config struct {
	Log      Log      `yaml:"log"`
	HTTP     HTTP     `yaml:"http"`
	Redis    Redis    `yaml:"redis"`
	Lock     Lock     `yaml:"lock"`
	Shutdown Shutdown `yaml:"shutdown"`
	History  History  `yaml:"history"`
	// Calendars are the dates on which the jobs that name one have no
	// slots.
	Calendars []Calendar `yaml:"calendars"`
	// Notify are the webhooks the jobs' notify rules name.
	Notify []NotifyTarget `yaml:"notify"`
	// Groups are the concurrency groups: at most a limit of runs of the
	// jobs that name one at once, fleet-wide.
	Groups []Group `yaml:"groups"`
	// Jobs in file order. Load decodes them one by one, each over
	// DefaultJob, not with the rest of the file.
	Jobs []Job `yaml:"jobs"`

	// Path is the file the configuration was read from ("" for none).
	Path string `yaml:"-"`
}

// Defaults returns the contract's defaults (no jobs).
func Defaults() Config {
	return Config{
		Log:      defaultLog(),
		HTTP:     defaultHTTP(),
		Redis:    defaultRedis(),
		Lock:     defaultLock(),
		Shutdown: defaultShutdown(),
		History:  defaultHistory(),
	}
}

// Job returns the job named name.
func (c *Config) Job(name string) (*Job, bool) {
	for i := range c.Jobs {
		if c.Jobs[i].Name == name {
			return &c.Jobs[i], true
		}
	}
	return nil, false
}
