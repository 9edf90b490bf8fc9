package config

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
)

// validate checks the decoded configuration as a whole and builds each
// job's schedule, location and runner. It records every problem, settings
// in the order of the sections, then the jobs.
func (l *loader) validate(c *Config, malformed map[int]bool) {
	l.validateLog(c)
	l.validateHTTP(c)
	l.validateRedis(c)
	l.validateLock(c)
	l.validateShutdown(c)
	l.validateHistory(c)
	l.validateCalendars(c)
	l.validateNotify(c)
	l.groups = l.validateGroups(c)

	seen := map[string]int{}
	for i := range c.Jobs {
		if malformed[i] {
			continue
		}
		l.validateJob(c, i, &c.Jobs[i], seen)
		l.checkStopGrace(i, &c.Jobs[i], c.Lock)
	}
}

// want reports v unless it is one of allowed: "want a, b or c".
func want[T ~string](v T, allowed ...T) error {
	if slices.Contains(allowed, v) {
		return nil
	}
	s := make([]string, len(allowed))
	for i, a := range allowed {
		s[i] = string(a)
	}
	if len(s) == 1 {
		return fmt.Errorf("want %s", s[0])
	}
	return fmt.Errorf("want %s or %s", strings.Join(s[:len(s)-1], ", "), s[len(s)-1])
}

func oneOf(l *loader, path, v string, allowed ...string) {
	if err := want(v, allowed...); err != nil {
		l.addValue(path, v, err)
	}
}

func positive(l *loader, path string, d time.Duration) {
	if d <= 0 {
		l.addf(path, "must be positive, got %s", d)
	}
}

// atMost reports d above limit; why says what the limit protects.
func atMost(l *loader, path string, d, limit time.Duration, why string) {
	if d > limit {
		l.addf(path, "must be at most %s (%s), got %s", limit, why, d)
	}
}

func notNegative(l *loader, path string, d time.Duration) {
	if d < 0 {
		l.addf(path, "must not be negative, got %s", d)
	}
}

// checkAddr validates host:port; the host may be empty only for a listen
// address.
func checkAddr(addr string, listen bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		if listen {
			return errors.New("want host:port or :port")
		}
		return errors.New("want host:port")
	}
	if host == "" && !listen {
		return errors.New("want host:port (the host is missing)")
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		return errors.New("invalid port: not a number") // not quoted: it may be the rest of a connection string
	}
	if n < 0 || n > 65535 || (n == 0 && !listen) {
		return fmt.Errorf("invalid port %q", port)
	}
	return nil
}
