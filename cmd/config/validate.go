package config

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slotlock/slotlock/jobs"
	"github.com/slotlock/slotlock/scheduler"
)

// validate checks the decoded configuration as a whole and builds each
// job's schedule, location and runner. It records every problem.
func (l *loader) validate(c *Config, malformed map[int]bool) {
	oneOf(l, "log.level", c.Log.Level, "debug", "info", "warn", "error")
	oneOf(l, "log.format", c.Log.Format, "auto", "json", "text")
	if c.HTTP.Addr != "" {
		if err := checkAddr(c.HTTP.Addr, true); err != nil {
			l.addValue("http.addr", c.HTTP.Addr, err)
		}
	}
	l.validateRedis(&c.Redis)

	positive(l, "lock.ttl", c.Lock.TTL)
	if err := scheduler.CheckClockSkew(c.Lock.MaxClockSkew); err != nil {
		l.add("lock.max_clock_skew", err)
	}
	if c.Lock.TTL > 0 && c.Redis.OpTimeout > 0 && c.Lock.TTL <= 3*c.Redis.OpTimeout {
		l.addf("lock.ttl", "must be greater than 3 x redis.op_timeout (%s), got %s", 3*c.Redis.OpTimeout, c.Lock.TTL)
	}
	if c.Lock.TTL > 0 && c.Lock.MaxClockSkew >= c.Lock.TTL {
		l.addf("lock.max_clock_skew", "must be less than lock.ttl (%s), got %s", c.Lock.TTL, c.Lock.MaxClockSkew)
	}
	notNegative(l, "shutdown.grace", c.Shutdown.Grace)

	seen := map[string]int{}
	for i := range c.Jobs {
		if malformed[i] {
			continue
		}
		l.validateJob(i, &c.Jobs[i], seen)
	}
}

func (l *loader) validateRedis(r *Redis) {
	seen := map[string]int{}
	for i, n := range r.Nodes {
		p := fmt.Sprintf("redis.nodes[%d].addr", i)
		if n.Addr == "" {
			l.add(p, errors.New("required (host:port)"))
			continue
		}
		if err := checkAddr(n.Addr, false); err != nil {
			l.addValue(p, n.Addr, err)
			continue
		}
		if first, dup := seen[n.Addr]; dup {
			l.addValue(p, n.Addr, fmt.Errorf("duplicate of redis.nodes[%d]: each node must be an independent Redis", first))
			continue
		}
		seen[n.Addr] = i
	}
	switch r.Auth {
	case AuthPassword:
		if r.EntraClientID != "" {
			l.add("redis.entra_client_id", errors.New("only used with redis.auth: entra"))
		}
	case AuthEntra:
		if r.Password != "" && r.PasswordFile == "" {
			l.add("redis.password", errors.New("not used with redis.auth: entra (tokens replace the password)"))
		}
		if r.PasswordFile != "" {
			l.add("redis.password_file", errors.New("not used with redis.auth: entra (tokens replace the password)"))
		}
		if !r.TLS {
			l.add("redis.tls", errors.New("must be true with redis.auth: entra (tokens must not cross the network in clear text)"))
		}
		if len(r.Nodes) == 0 {
			l.add("redis.auth", errors.New("entra needs redis.nodes"))
		}
	default:
		l.addValue("redis.auth", r.Auth, fmt.Errorf("want %s or %s", AuthPassword, AuthEntra))
	}
	if r.Auth == AuthPassword && r.Password != "" && !r.TLS && len(r.Nodes) > 0 && !r.AllowInsecure {
		src := "redis.password"
		if r.PasswordFile != "" {
			src = "redis.password_file"
		}
		l.add("redis.tls", fmt.Errorf("must be true when a password is set (%s): without TLS the password and every lock "+
			"cross the network in clear text; set redis.allow_insecure: true to accept that", src))
	}
	switch {
	case r.KeyPrefix == "":
		l.add("redis.key_prefix", errors.New("must not be empty"))
	case strings.ContainsAny(r.KeyPrefix, "{} \t\r\n"):
		l.addValue("redis.key_prefix", r.KeyPrefix, errors.New("must not contain braces or spaces (braces would break the per-job hash tag)"))
	}
	positive(l, "redis.dial_timeout", r.DialTimeout)
	positive(l, "redis.op_timeout", r.OpTimeout)
}

func (l *loader) validateJob(i int, j *Job, seen map[string]int) {
	base := "jobs[" + strconv.Itoa(i) + "]"
	add := func(field, value string, err error) {
		p := joinPath(base, field)
		if l.undecodable[p] {
			return
		}
		l.errs = append(l.errs, &Error{Path: p, Index: i, Job: j.Name, Value: value, Err: err, Where: l.where(p)})
	}
	if err := scheduler.CheckJobName(j.Name); err != nil {
		add("name", "", err)
	} else {
		if first, dup := seen[j.Name]; dup {
			add("name", "", fmt.Errorf("duplicate: jobs[%d] has the same name", first))
		} else {
			seen[j.Name] = i
		}
	}

	loc := time.UTC
	switch {
	case j.Timezone == "Local":
		add("timezone", j.Timezone, errors.New(`depends on the machine; use an IANA name such as "Europe/Berlin" or "UTC"`))
	default:
		tz, err := time.LoadLocation(j.Timezone)
		if err != nil {
			add("timezone", j.Timezone, errors.New(`unknown time zone; use an IANA name such as "Europe/Berlin" or "UTC"`))
		} else {
			loc = tz
			j.Location = tz
		}
	}

	if strings.TrimSpace(j.Spec) == "" {
		add("schedule", "", errors.New(`required: 5 or 6 cron fields, or a descriptor such as "@every 10s" or "@daily"`))
	} else if s, err := scheduler.ParseSchedule(j.Spec, loc); err != nil {
		add("schedule", j.Spec, err)
	} else {
		j.Schedule = s
	}

	if j.Timeout <= 0 {
		add("timeout", "", fmt.Errorf("must be positive, got %s", j.Timeout))
	}
	if !slices.Contains([]string{OverlapForbid, OverlapAllow}, j.Overlap) {
		add("overlap", j.Overlap, fmt.Errorf("want %s or %s", OverlapForbid, OverlapAllow))
	}
	if !slices.Contains([]string{MisfireSkip, MisfireRunOnce}, j.Misfire.Policy) {
		add("misfire.policy", j.Misfire.Policy, fmt.Errorf("want %s or %s", MisfireSkip, MisfireRunOnce))
	}
	if err := scheduler.CheckDeadline(j.Misfire.Deadline); err != nil {
		add("misfire.deadline", "", err)
	}
	if j.Retry.Max < 0 {
		add("retry.max", "", fmt.Errorf("must not be negative, got %d", j.Retry.Max))
	}
	if j.Retry.Backoff <= 0 {
		add("retry.backoff", "", fmt.Errorf("must be positive, got %s", j.Retry.Backoff))
	}

	if j.Plugin == "" {
		add("plugin", "", fmt.Errorf("required: one of %s", strings.Join(jobs.Names(), ", ")))
		return
	}
	factory, ok := jobs.Lookup(j.Plugin)
	if !ok {
		add("plugin", j.Plugin, fmt.Errorf("not registered; registered plugins: %s", strings.Join(jobs.Names(), ", ")))
		return
	}
	runner, err := build(factory, j.Params)
	if err != nil {
		l.addDecodeErrors(joinPath(base, "params"), i, j.Name, err)
		return
	}
	if runner == nil {
		add("plugin", j.Plugin, errors.New("the plugin's factory returned neither a job nor an error"))
		return
	}
	j.Runner = runner
}

// build calls a plugin factory; a panic in it becomes an error.
func build(f jobs.Factory, params map[string]any) (j jobs.Job, err error) {
	defer func() {
		if v := recover(); v != nil {
			j, err = nil, fmt.Errorf("the plugin's factory panicked: %v", v)
		}
	}()
	if params == nil {
		params = map[string]any{}
	}
	return f(params)
}

func oneOf(l *loader, path, v string, allowed ...string) {
	if !slices.Contains(allowed, v) {
		l.addValue(path, v, fmt.Errorf("want %s", orList(allowed)))
	}
}

func orList(s []string) string {
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

func positive(l *loader, path string, d time.Duration) {
	if d <= 0 {
		l.addf(path, "must be positive, got %s", d)
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
	if err != nil || n < 0 || n > 65535 || (n == 0 && !listen) {
		return fmt.Errorf("invalid port %q", port)
	}
	return nil
}
