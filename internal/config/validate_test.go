package config

import (
	"fmt"
	"strings"
	"testing"
)

// job renders one job entry with a valid default for every field that
// fields does not set.
func job(fields string) string {
	base := map[string]string{
		"name":     "report",
		"schedule": `"@daily"`,
		"plugin":   "log",
		"params":   "{message: hi}",
	}
	var b strings.Builder
	b.WriteString("  - ")
	first := true
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(fields), "\n") {
		if line == "" {
			continue
		}
		k, _, _ := strings.Cut(strings.TrimSpace(line), ":")
		seen[k] = true
		if !first {
			b.WriteString("    ")
		}
		b.WriteString(strings.TrimSpace(line) + "\n")
		first = false
	}
	for _, k := range []string{"name", "schedule", "plugin", "params"} {
		if seen[k] {
			continue
		}
		if !first {
			b.WriteString("    ")
		}
		fmt.Fprintf(&b, "%s: %s\n", k, base[k])
		first = false
	}
	return b.String()
}

func TestValidationErrors(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		env  []string
		want string // the start of the error line (the position follows)
	}{
		// settings
		{"log level", "log: {level: loud}", nil, `log.level "loud": want debug, info, warn or error`},
		{"log format", "log: {format: xml}", nil, `log.format "xml": want auto, json or text`},
		{"http addr", "http: {addr: localhost}", nil, `http.addr "localhost": want host:port or :port`},
		{"http port", "http: {addr: ':99999'}", nil, `http.addr ":99999": invalid port "99999"`},
		{"node addr missing", "redis: {nodes: [{addr: ''}]}", nil, `redis.nodes[0].addr: required (host:port)`},
		{"node addr no port", "redis: {nodes: [{addr: cache-a}]}", nil, `redis.nodes[0].addr "cache-a": want host:port`},
		{"node addr no host", "redis: {nodes: [{addr: ':6379'}]}", nil, `redis.nodes[0].addr ":6379": want host:port (the host is missing)`},
		{"node duplicate", "redis: {nodes: [{addr: 'a:1'}, {addr: 'b:1'}, {addr: 'a:1'}]}", nil, `redis.nodes[2].addr "a:1": duplicate of redis.nodes[0]: each node must be an independent Redis`},
		{"node as string", "redis: {nodes: ['a:1']}", nil, `redis.nodes[0]: expected a map, got string "a:1"`},
		{"password and file", "redis: {password: x, password_file: /etc/hostname}", nil, `redis.password_file: set either redis.password or redis.password_file, not both`},
		{"auth unknown", "redis: {auth: kerberos}", nil, `redis.auth "kerberos": want password or entra`},
		{"entra client id without entra", "redis: {entra_client_id: abc}", nil, `redis.entra_client_id: only used with redis.auth: entra`},
		{"entra with password", "redis: {auth: entra, tls: true, password: x, nodes: [{addr: 'a:1'}]}", nil, `redis.password: not used with redis.auth: entra (tokens replace the password)`},
		{"entra without tls", "redis: {auth: entra, nodes: [{addr: 'a:1'}]}", nil, `redis.tls: must be true with redis.auth: entra (tokens must not cross the network in clear text)`},
		{"password without tls", "redis: {password: x, nodes: [{addr: 'a:1'}]}", nil, `redis.tls: must be true when a password is set (redis.password): without TLS the password and every lock cross the network in clear text; set redis.allow_insecure: true to accept that`},
		{"env password without tls", "redis: {nodes: [{addr: '127.0.0.1:6379'}]}", []string{"SLOTLOCK_REDIS__PASSWORD=x"}, `redis.tls: must be true when a password is set (redis.password)`},
		{"entra without nodes", "redis: {auth: entra, tls: true}", nil, `redis.auth: entra needs redis.nodes`},
		{"key prefix empty", "redis: {key_prefix: ''}", nil, `redis.key_prefix: must not be empty`},
		{"key prefix braces", "redis: {key_prefix: 'a{b}'}", nil, `redis.key_prefix "a{b}": must not contain braces or spaces (braces would break the per-job hash tag)`},
		{"dial timeout", "redis: {dial_timeout: 0s}", nil, `redis.dial_timeout: must be positive, got 0s`},
		{"op timeout", "redis: {op_timeout: -1ms}", nil, `redis.op_timeout: must be positive, got -1ms`},
		{"ttl", "lock: {ttl: 0s}", nil, `lock.ttl: must be positive, got 0s`},
		{"ttl vs op timeout", "lock: {ttl: 300ms, max_clock_skew: 0s}", nil, `lock.ttl: must be greater than 3 x redis.op_timeout (300ms), got 300ms`},
		{"skew negative", "lock: {max_clock_skew: -1s}", nil, `lock.max_clock_skew: must not be negative, got -1s`},
		{"skew vs ttl", "lock: {ttl: 2s, max_clock_skew: 2s}", nil, `lock.max_clock_skew: must be less than lock.ttl (2s), got 2s`},
		{"skew ceiling", "lock: {ttl: 5m, max_clock_skew: 2m}", nil, `lock.max_clock_skew: must be at most 1m0s (done markers live about twice as long), got 2m0s`},
		{"grace", "shutdown: {grace: -5s}", nil, `shutdown.grace: must not be negative, got -5s`},
		{"duration as number", "lock: {ttl: 30}", nil, `lock.ttl: expected a duration such as "30s", got integer 30`},
		{"bad duration", "shutdown: {grace: 5 minutes}", nil, `shutdown.grace: invalid duration "5 minutes" (use a Go duration such as "500ms", "30s", "10m")`},
		{"section not a map", "lock: 30s", nil, `lock: expected a map, got string "30s"`},
		{"bool as string", "redis: {tls: 'yes'}", nil, `redis.tls: expected true or false, got "yes"`},
		{"string as number", "redis: {username: 12}", nil, `redis.username: expected a string, got integer 12 (quote it)`},
		// unknown keys, at every level
		{"unknown section", "lokc: {ttl: 1s}", nil, `unknown key lokc (did you mean "lock"?)`},
		{"unknown setting", "lock: {tll: 1s}", nil, `unknown key lock.tll (did you mean "ttl"?)`},
		{"unknown node key", "redis: {nodes: [{adr: 'a:1'}]}", nil, `unknown key redis.nodes[0].adr (did you mean "addr"?)`},
		{"unknown job key", "jobs:\n" + job("schedul: '@daily'\nschedule: '@daily'"), nil, `jobs[0] "report": unknown key jobs[0].schedul (did you mean "schedule"?)`},
		{"unknown misfire key", "jobs:\n" + job("misfire: {polcy: skip}"), nil, `jobs[0] "report": unknown key jobs[0].misfire.polcy (did you mean "policy"?)`},
		{"unknown retry key", "jobs:\n" + job("retry: {maximum: 3}"), nil, `jobs[0] "report": unknown key jobs[0].retry.maximum`},
		{"unknown params key", "jobs:\n" + job("params: {message: hi, colour: red}"), nil, `jobs[0] "report": unknown key jobs[0].params.colour`},
		// jobs
		{"jobs not a list", "jobs: {report: {}}", nil, `jobs: expected a list of jobs, got a map`},
		{"job not a map", "jobs: [report]", nil, `jobs[0]: expected a job (a map with name, schedule, plugin, ...), got the string "report"`},
		{"name required", "jobs:\n" + job("name: ''"), nil, `jobs[0]: name: required`},
		{"name pattern", "jobs:\n" + job("name: Nightly Report"), nil, `jobs[0] "Nightly Report": name: must match [a-z0-9][a-z0-9._-]{0,62} (lower case, digits, '.', '_', '-'; at most 63)`},
		{"name too long", "jobs:\n" + job("name: "+strings.Repeat("a", 64)), nil, `jobs[0] "` + strings.Repeat("a", 64) + `": name: must match [a-z0-9][a-z0-9._-]{0,62}`},
		{"name unique", "jobs:\n" + job("") + job(""), nil, `jobs[1] "report": name: duplicate: jobs[0] has the same name`},
		{"schedule required", "jobs:\n" + job("schedule: ''"), nil, `jobs[0] "report": schedule: required: 5 or 6 cron fields, or a descriptor such as "@every 10s" or "@daily"`},
		{"schedule field range", "jobs:\n" + job(`schedule: "0 61 * * * *"`), nil, `jobs[0] "report": schedule "0 61 * * * *": minute 61 out of range [0,59]`},
		{"schedule field count", "jobs:\n" + job(`schedule: "* * *"`), nil, `jobs[0] "report": schedule "* * *": `},
		{"schedule descriptor", "jobs:\n" + job(`schedule: "@fortnightly"`), nil, `jobs[0] "report": schedule "@fortnightly": `},
		{"timezone unknown", "jobs:\n" + job("timezone: Mars/Olympus_Mons"), nil, `jobs[0] "report": timezone "Mars/Olympus_Mons": unknown time zone; use an IANA name such as "Europe/Berlin" or "UTC"`},
		{"timezone local", "jobs:\n" + job("timezone: Local"), nil, `jobs[0] "report": timezone "Local": depends on the machine; use an IANA name such as "Europe/Berlin" or "UTC"`},
		{"plugin required", "jobs:\n" + job("plugin: ''"), nil, `jobs[0] "report": plugin: required: one of exec, http, log`},
		{"plugin unknown", "jobs:\n" + job("plugin: shell"), nil, `jobs[0] "report": plugin "shell": not registered; registered plugins: exec, http, log`},
		{"plugin rejects params", "jobs:\n" + job("plugin: exec\nparams: {command: 'ls -l'}"), nil, `jobs[0] "report": params.command: expected a list, got a string`},
		{"plugin own check", "jobs:\n" + job("plugin: exec\nparams: {}"), nil, `jobs[0] "report": params: command: required`},
		{"plugin factory panics", "jobs:\n" + job("plugin: test.panicky-factory"), nil, `jobs[0] "report": params: the plugin's factory panicked: factory bug`},
		{"plugin returns nil job", "jobs:\n" + job("plugin: test.nil-job"), nil, `jobs[0] "report": plugin "test.nil-job": the plugin's factory returned neither a job nor an error`},
		{"timeout", "jobs:\n" + job("timeout: 0s"), nil, `jobs[0] "report": timeout: must be positive, got 0s`},
		{"overlap", "jobs:\n" + job("overlap: sometimes"), nil, `jobs[0] "report": overlap "sometimes": want forbid, allow or replace`},
		{"misfire policy", "jobs:\n" + job("misfire: {policy: run_some}"), nil, `jobs[0] "report": misfire.policy "run_some": want skip, run_once or run_all`},
		{"misfire max", "jobs:\n" + job("misfire: {policy: run_all, max: 0}"), nil, `jobs[0] "report": misfire.max: must be between 1 and 1000, got 0`},
		{"misfire max ceiling", "jobs:\n" + job("misfire: {max: 1001}"), nil, `jobs[0] "report": misfire.max: must be between 1 and 1000, got 1001`},
		{"misfire deadline", "jobs:\n" + job("misfire: {deadline: -1m}"), nil, `jobs[0] "report": misfire.deadline: must be positive, got -1m0s`},
		{"pause on failure", "jobs:\n" + job("pause_on_failure: -1"), nil, `jobs[0] "report": pause_on_failure: must be between 0 and 100000, got -1`},
		{"misfire deadline ceiling", "jobs:\n" + job("misfire: {deadline: 48h}"), nil, `jobs[0] "report": misfire.deadline: must be at most 24h0m0s (run_once done markers live that long), got 48h0m0s`},
		{"retry max", "jobs:\n" + job("retry: {max: -1}"), nil, `jobs[0] "report": retry.max: must not be negative, got -1`},
		{"jitter negative", "jobs:\n" + job("jitter: -1s"), nil, `jobs[0] "report": jitter: must not be negative, got -1s`},
		{"jitter above the interval", "jobs:\n" + job("schedule: '@every 10s'\njitter: 11s"), nil,
			`jobs[0] "report": jitter: must be at most the schedule's shortest interval between two slots (10s), got 11s`},
		{"jitter above a DST day", "jobs:\n" + job("timezone: America/New_York\njitter: 24h"), nil,
			`jobs[0] "report": jitter: must be at most the schedule's shortest interval between two slots (23h0m0s), got 24h0m0s`},
		{"jitter from the environment", "jobs:\n" + job("schedule: '*/10 * * * * *'"), []string{"SLOTLOCK_JOBS__report__JITTER=20s"},
			`jobs[0] "report": jitter: must be at most the schedule's shortest interval between two slots (10s), got 20s (jobs[0].jitter, env SLOTLOCK_JOBS__report__JITTER)`},
		{"retry backoff", "jobs:\n" + job("retry: {backoff: 0s}"), nil, `jobs[0] "report": retry.backoff: must be positive, got 0s`},
		{"enabled type", "jobs:\n" + job("enabled: 1"), nil, `jobs[0] "report": enabled: expected true or false, got integer 1`},
		// environment
		{"env value", "", []string{"SLOTLOCK_LOCK__TTL=-3s"}, `lock.ttl: must be positive, got -3s`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lines := loadErrs(t, tc.yaml, tc.env...)
			for _, l := range lines {
				if strings.HasPrefix(l, tc.want) {
					return
				}
			}
			t.Fatalf("errors:\n  %s\nwant the line %q", strings.Join(lines, "\n  "), tc.want)
		})
	}
}

func TestErrorPositions(t *testing.T) {
	yaml := `lock:
  ttl: 0s
jobs:
  - name: a
    schedule: "@daily"
    plugin: log
    params: {message: x}
  - name: report
    plugin: log
    params:
      message: x
      colour: red
    schedule: "0 61 * * * *"
  - name: jittery
    schedule: "*/5 * * * *"
    jitter: 6m
    plugin: log
    params: {message: x}
`
	p := writeConfig(t, yaml)
	_, err := Load(p, nil)
	want := []string{
		`lock.ttl: must be positive, got 0s (` + p + `:2:3)`,
		`jobs[1] "report": schedule "0 61 * * * *": minute 61 out of range [0,59] (jobs[1].schedule, ` + p + `:13:5)`,
		`jobs[1] "report": unknown key jobs[1].params.colour (` + p + `:12:7)`,
		`jobs[2] "jittery": jitter: must be at most the schedule's shortest interval between two slots (5m0s), got 6m0s (jobs[2].jitter, ` + p + `:16:5)`,
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("errors\n%v\nlack %q", err, w)
		}
	}
}

// Every problem is reported, not only the first, and each names its path.
func TestAllErrorsAtOnce(t *testing.T) {
	yaml := `
log: {level: loud, format: xml}
lock: {ttl: 200ms, tll: 1s}
shutdown: {grace: -1s}
redis:
  nodes: [{addr: "a:1"}, {addr: "a:1"}]
jobs:
  - name: heartbeat
    schedul: "* * * * *"
    plugin: log
    params: {message: hi}
  - name: report
    schedule: "0 61 * * * *"
    timezone: Mars/Base
    plugin: exec
    timeout: -1s
    overlap: never
    misfire: {policy: sometimes, dedline: 5m}
    retry: {max: -1, backoff: 5}
    params: {command: "ls -l"}
  - name: heartbeat
    schedule: "@every 10s"
    plugin: nope
  - "just a string"
  - name: Bad_Name
    schedule: "@daily"
    plugin: http
    params: {url: "ftp://x"}
`
	lines := loadErrs(t, yaml, "SLOTLOCK_REDIS__OP_TIMEOUT=0s")
	want := []string{
		`unknown key lock.tll (did you mean "ttl"?)`,
		`log.level "loud": want debug, info, warn or error`,
		`log.format "xml": want auto, json or text`,
		`redis.nodes[1].addr "a:1": duplicate of redis.nodes[0]`,
		`redis.op_timeout: must be positive, got 0s (env SLOTLOCK_REDIS__OP_TIMEOUT)`,
		`lock.max_clock_skew: must be less than lock.ttl (200ms), got 2s`,
		`shutdown.grace: must not be negative, got -1s`,
		`jobs[0] "heartbeat": unknown key jobs[0].schedul (did you mean "schedule"?)`,
		`jobs[0] "heartbeat": schedule: required`,
		`jobs[1] "report": unknown key jobs[1].misfire.dedline (did you mean "deadline"?)`,
		`jobs[1] "report": retry.backoff: expected a duration such as "30s", got integer 5`,
		`jobs[1] "report": timezone "Mars/Base": unknown time zone`,
		`jobs[1] "report": schedule "0 61 * * * *": minute 61 out of range [0,59]`,
		`jobs[1] "report": timeout: must be positive, got -1s`,
		`jobs[1] "report": overlap "never": want forbid, allow or replace`,
		`jobs[1] "report": misfire.policy "sometimes": want skip, run_once or run_all`,
		`jobs[1] "report": retry.max: must not be negative, got -1`,
		`jobs[1] "report": params.command: expected a list, got a string`,
		`jobs[2] "heartbeat": name: duplicate: jobs[0] has the same name`,
		`jobs[2] "heartbeat": plugin "nope": not registered`,
		`jobs[3]: expected a job`,
		`jobs[4] "Bad_Name": name: must match`,
		`jobs[4] "Bad_Name": params: url: want an absolute http:// or https:// URL, got "ftp://x"`,
	}
	if len(lines) != len(want) {
		t.Errorf("got %d errors, want %d:\n  %s", len(lines), len(want), strings.Join(lines, "\n  "))
	}
	for _, w := range want {
		if !containsLine(lines, w) {
			t.Errorf("missing %q in:\n  %s", w, strings.Join(lines, "\n  "))
		}
	}
	// Settings come first, then the jobs in file order.
	lastJob := -2
	for _, l := range lines {
		idx := -1
		fmt.Sscanf(l, "jobs[%d]", &idx)
		if idx < lastJob {
			t.Fatalf("errors not grouped by job order:\n  %s", strings.Join(lines, "\n  "))
		}
		lastJob = idx
	}
}

func TestYAMLSyntaxErrors(t *testing.T) {
	cases := []struct {
		yaml string
		want string // substring, including line and column
	}{
		{"log:\n  level: info\n    format: json\n", ":3:11: invalid YAML: mapping values are not allowed in this context"},
		{"jobs:\n  - name: a\n  schedule: x\n", ":3:3: invalid YAML: did not find expected '-' indicator"},
		{"log: {level: info\n", ":2:1: invalid YAML: did not find expected ',' or '}'"},
		{"log:\n\tlevel: info\n", ":2:1: invalid YAML: found character that cannot start any token"},
		{"log: {level: info}\nlog: {level: debug}\n", ":2:1: invalid YAML: mapping key \"log\" already defined at line 1"},
		{"- log\n- lock\n", ":1:1: the top level must be a map of sections (log, http, redis, lock, shutdown, history, calendars, notify, groups, jobs), got a list"},
		{"just text\n", ":1:1: the top level must be a map of sections"},
		{"log: {level: info}\n---\nlock: {ttl: 1s}\n", ":2:1: the file holds more than one YAML document"},
	}
	for _, tc := range cases {
		p := writeConfig(t, tc.yaml)
		_, err := Load(p, nil)
		if err == nil || !strings.Contains(err.Error(), p+tc.want) {
			t.Errorf("%q:\n got %v\nwant %s%s", tc.yaml, err, p, tc.want)
		}
	}
}

// A value that does not decode is reported once, not again by validation.
func TestUndecodableValueReportedOnce(t *testing.T) {
	lines := loadErrs(t, "jobs:\n"+job("schedule: 2026-01-01\ntimeout: 30"))
	want := []string{
		`jobs[0] "report": schedule: expected a string, got timestamp 2026-01-01T00:00:00Z (quote it)`,
		`jobs[0] "report": timeout: expected a duration such as "30s", got integer 30`,
	}
	if len(lines) != len(want) {
		t.Fatalf("got\n  %s\nwant exactly\n  %s", strings.Join(lines, "\n  "), strings.Join(want, "\n  "))
	}
	for i := range want {
		if !strings.HasPrefix(lines[i], want[i]) {
			t.Errorf("line %d = %q, want %q", i, lines[i], want[i])
		}
	}
}
