package config

// HTTP configures the operations server (/healthz, /readyz, /metrics).
type HTTP struct {
	Addr string `yaml:"addr" redact:"show"` // "" turns the server off
}

func defaultHTTP() HTTP { return HTTP{Addr: ":8080"} }

func (l *loader) validateHTTP(c *Config) {
	if c.HTTP.Addr != "" {
		if err := checkAddr(c.HTTP.Addr, true); err != nil {
			l.addValue("http.addr", c.HTTP.Addr, err)
		}
	}
}
