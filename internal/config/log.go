package config

// Log configures the process's log output.
type Log struct {
	Level  string `yaml:"level" redact:"show"`  // debug | info | warn | error
	Format string `yaml:"format" redact:"show"` // auto | json | text
}

func defaultLog() Log { return Log{Level: "info", Format: "auto"} }

func (l *loader) validateLog(c *Config) {
	oneOf(l, "log.level", c.Log.Level, "debug", "info", "warn", "error")
	oneOf(l, "log.format", c.Log.Format, "auto", "json", "text")
}
