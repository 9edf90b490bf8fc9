package config

// HTTP configures the operations server (/healthz, /readyz, /metrics).
type HTTP struct {
	Addr string `yaml:"addr" redact:"show"` // "" turns the server off
	// UI adds the read-only status page (/) and its JSON (/api/v1/...):
	// off by default, as it shows job names, schedules, pause reasons,
	// error classes and replica names to whoever reaches the port.
	UI bool `yaml:"ui" redact:"show"`
}

func defaultHTTP() HTTP { return HTTP{Addr: ":8080"} }

func (l *loader) validateHTTP(c *Config) {
	if c.HTTP.Addr != "" {
		if err := checkAddr(c.HTTP.Addr, true); err != nil {
			l.addValue("http.addr", c.HTTP.Addr, err)
		}
	}
}
