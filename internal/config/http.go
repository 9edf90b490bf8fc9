package config

import (
	"fmt"
	"net"
	"strings"
)

// HTTP configures the operations server (/healthz, /readyz, /metrics).
type HTTP struct {
	Addr string `yaml:"addr" redact:"show"` // "" turns the server off
	// UI adds the read-only status page (/) and its JSON (/api/v1/...):
	// off by default, as it shows job names, schedules, pause reasons,
	// error classes and replica names to whoever reaches the port.
	UI bool `yaml:"ui" redact:"show"`
	// UIPublic allows UI on an address other than loopback (every
	// interface, ":8080", included): the page has no authentication of its
	// own, so it is refused there unless a proxy in front of it does that.
	UIPublic bool `yaml:"ui_public" redact:"show"`
	// JobHistograms gives /metrics's histograms (start delay, run
	// duration, lock acquisition) a series per job. False keeps one per
	// outcome or result for all jobs: with thousands of jobs the per-job
	// buckets are most of what a scrape carries (docs/operations.md).
	JobHistograms bool `yaml:"job_histograms" redact:"show"`
}

func defaultHTTP() HTTP { return HTTP{Addr: ":8080", JobHistograms: true} }

func (l *loader) validateHTTP(c *Config) {
	if c.HTTP.Addr == "" {
		return
	}
	if err := checkAddr(c.HTTP.Addr, true); err != nil {
		l.addValue("http.addr", c.HTTP.Addr, err)
		return
	}
	if c.HTTP.UI && !c.HTTP.UIPublic && !loopback(c.HTTP.Addr) {
		l.add("http.ui", fmt.Errorf("the status page would be served to every network that reaches http.addr %q, "+
			"without authentication: bind http.addr to 127.0.0.1:PORT (and reach it through a tunnel or an "+
			"authenticating proxy), or set http.ui_public: true", c.HTTP.Addr))
	}
}

// loopback reports whether a listen address binds only the loopback
// interface ("127.0.0.1:8080", "[::1]:8080", "localhost:8080").
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
