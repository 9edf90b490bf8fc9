// Package config loads slotlock's configuration: built-in defaults, then the
// YAML file, then SLOTLOCK_* environment overrides, decoded strictly and
// validated as a whole. Load either returns a Config in which every job has
// its schedule parsed, its time zone loaded and its plugin built, or an
// Errors value that lists every problem found, each naming its key path.
//
// The schema is the contract's (see the README, "Configuration"); the Go
// field names follow the YAML keys.
package config

import (
	"time"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/scheduler"

	_ "time/tzdata" // time zones work in containers without /usr/share/zoneinfo
)

// Config is the effective, validated configuration.
type Config struct {
	Log      Log      `yaml:"log"`
	HTTP     HTTP     `yaml:"http"`
	Redis    Redis    `yaml:"redis"`
	Lock     Lock     `yaml:"lock"`
	Shutdown Shutdown `yaml:"shutdown"`
	// Jobs in file order. Load decodes them one by one (so each gets the
	// per-job defaults), hence the "-" tag.
	Jobs []Job `yaml:"-"`

	// Path is the file the configuration was read from ("" for none).
	Path string `yaml:"-"`
}

// Log configures the process's log output.
type Log struct {
	Level  string `yaml:"level"`  // debug | info | warn | error
	Format string `yaml:"format"` // auto | json | text
}

// HTTP configures the operations server (/healthz, /readyz, /metrics).
type HTTP struct {
	Addr string `yaml:"addr"` // "" turns the server off
}

// Redis auth modes.
const (
	AuthPassword = "password" // username/password (or none)
	AuthEntra    = "entra"    // Microsoft Entra ID tokens from a managed identity
)

// Redis configures the Redlock nodes. No nodes means in-process locks.
type Redis struct {
	Nodes        []Node `yaml:"nodes"`
	Username     string `yaml:"username"`
	Password     string `yaml:"password"`      // after Load: also the contents of PasswordFile
	PasswordFile string `yaml:"password_file"` // read by Load, trailing newline trimmed
	TLS          bool   `yaml:"tls"`
	// AllowInsecure accepts a password sent to the nodes without TLS (an
	// error otherwise); a warning is logged at start.
	AllowInsecure bool   `yaml:"allow_insecure"`
	KeyPrefix     string `yaml:"key_prefix"`
	// Auth is AuthPassword (default) or AuthEntra.
	Auth string `yaml:"auth"`
	// EntraClientID is the client id of the user-assigned managed identity
	// used with AuthEntra ("" = the system-assigned identity / default
	// credential chain).
	EntraClientID string        `yaml:"entra_client_id"`
	DialTimeout   time.Duration `yaml:"dial_timeout"`
	OpTimeout     time.Duration `yaml:"op_timeout"`
}

// Node is one independent Redis endpoint of the quorum.
type Node struct {
	Addr string `yaml:"addr"` // host:port
}

// Lock configures leases.
type Lock struct {
	TTL          time.Duration `yaml:"ttl"`
	MaxClockSkew time.Duration `yaml:"max_clock_skew"`
}

// Shutdown configures the graceful stop on SIGTERM.
type Shutdown struct {
	Grace time.Duration `yaml:"grace"`
}

// Overlap values.
const (
	OverlapForbid = "forbid"
	OverlapAllow  = "allow"
)

// Misfire policies.
const (
	MisfireSkip    = "skip"
	MisfireRunOnce = "run_once"
)

// Job is one configured job. The first group of fields mirrors the YAML;
// Load fills the second group for every valid job.
type Job struct {
	Name     string         `yaml:"name"`
	Spec     string         `yaml:"schedule"` // the schedule as written
	Timezone string         `yaml:"timezone"` // IANA name
	Plugin   string         `yaml:"plugin"`
	Enabled  bool           `yaml:"enabled"`
	Timeout  time.Duration  `yaml:"timeout"`
	Overlap  string         `yaml:"overlap"` // OverlapForbid | OverlapAllow
	Misfire  Misfire        `yaml:"misfire"`
	Retry    Retry          `yaml:"retry"`
	Params   map[string]any `yaml:"params"`

	// Schedule is Spec parsed in Location.
	Schedule scheduler.Schedule `yaml:"-"`
	// Location is Timezone loaded (time/tzdata is embedded).
	Location *time.Location `yaml:"-"`
	// Runner is the job built by the plugin's factory from Params.
	Runner jobs.Job `yaml:"-"`
}

// Misfire says what happens to slots that passed while no replica could
// run them.
type Misfire struct {
	Policy   string        `yaml:"policy"` // MisfireSkip | MisfireRunOnce
	Deadline time.Duration `yaml:"deadline"`
}

// Retry configures extra attempts within one slot.
type Retry struct {
	Max     int           `yaml:"max"`
	Backoff time.Duration `yaml:"backoff"` // doubles each attempt
}

// Defaults returns the contract's defaults (no jobs).
func Defaults() Config {
	return Config{
		Log:  Log{Level: "info", Format: "auto"},
		HTTP: HTTP{Addr: ":8080"},
		Redis: Redis{
			KeyPrefix:   "slotlock",
			Auth:        AuthPassword,
			DialTimeout: 250 * time.Millisecond,
			OpTimeout:   100 * time.Millisecond,
		},
		Lock:     Lock{TTL: 30 * time.Second, MaxClockSkew: 2 * time.Second},
		Shutdown: Shutdown{Grace: 25 * time.Second},
	}
}

// DefaultJob returns a job with the per-job defaults: timezone UTC,
// enabled, timeout 1h, overlap forbid, misfire skip within 10m, no retry
// (backoff 5s).
func DefaultJob() Job {
	return Job{
		Timezone: "UTC",
		Enabled:  true,
		Timeout:  time.Hour,
		Overlap:  OverlapForbid,
		Misfire:  Misfire{Policy: MisfireSkip, Deadline: 10 * time.Minute},
		Retry:    Retry{Max: 0, Backoff: 5 * time.Second},
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
