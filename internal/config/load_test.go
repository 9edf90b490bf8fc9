package config

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/slotlock/slotlock/internal/secrettest"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/slotlock/slotlock/jobs"
)

func init() {
	// A third-party plugin whose factory panics: Load must report it, not crash.
	jobs.Register("test.panicky-factory", func(map[string]any) (jobs.Job, error) { panic("factory bug") })
	jobs.Register("test.nil-job", func(map[string]any) (jobs.Job, error) { return nil, nil })
}

func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustLoad(t *testing.T, yaml string, environ ...string) *Config {
	t.Helper()
	cfg, err := Load(writeConfig(t, yaml), environ)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return cfg
}

// loadErrs loads and returns the error lines; it fails when Load succeeds.
func loadErrs(t *testing.T, yaml string, environ ...string) []string {
	t.Helper()
	cfg, err := Load(writeConfig(t, yaml), environ)
	if err == nil {
		t.Fatalf("Load accepted:\n%s", yaml)
	}
	secrettest.CaptureString(err.Error())
	if cfg != nil {
		t.Fatal("Load returned a config with an error")
	}
	errs, ok := err.(Errors)
	if !ok {
		t.Fatalf("error is %T, want config.Errors", err)
	}
	var lines []string
	for _, e := range errs {
		var ce *Error
		if !errors.As(e, &ce) {
			t.Fatalf("error %T is not *config.Error", e)
		}
		lines = append(lines, e.Error())
	}
	if got := strings.Split(err.Error(), "\n"); !reflect.DeepEqual(got, lines) {
		t.Fatalf("Errors.Error() is not one error per line:\n%s", err)
	}
	return lines
}

const minimalJob = `
jobs:
  - name: heartbeat
    schedule: "@every 10s"
    plugin: log
    params: {message: alive}
`

func TestLoadDefaults(t *testing.T) {
	for name, load := range map[string]func() (*Config, error){
		"no file":    func() (*Config, error) { return Load("", nil) },
		"empty file": func() (*Config, error) { return Load(writeConfig(t, ""), nil) },
		"comments":   func() (*Config, error) { return Load(writeConfig(t, "# nothing\n---\n"), nil) },
		"null":       func() (*Config, error) { return Load(writeConfig(t, "~\n"), nil) },
	} {
		cfg, err := load()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := Defaults()
		want.Path = cfg.Path
		want.Jobs = []Job{}
		if !reflect.DeepEqual(*cfg, want) {
			t.Errorf("%s: got %+v, want the defaults %+v", name, *cfg, want)
		}
	}
	d := Defaults()
	if d.Log.Level != "info" || d.Log.Format != "auto" || d.HTTP.Addr != ":8080" || d.Redis.KeyPrefix != "slotlock" ||
		d.Redis.DialTimeout != 250*time.Millisecond || d.Redis.OpTimeout != 100*time.Millisecond ||
		d.Lock.TTL != 30*time.Second || d.Lock.MaxClockSkew != 2*time.Second || d.Shutdown.Grace != 25*time.Second ||
		d.Redis.Auth != AuthPassword || len(d.Redis.Nodes) != 0 {
		t.Fatalf("defaults differ from the contract: %+v", d)
	}
}

func TestLoadFullConfig(t *testing.T) {
	cfg, err := Load("testdata/configs/full.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Settings the file leaves out keep their defaults: the wanted values
	// start from Defaults, so a new setting does not break this test.
	d := Defaults()
	if cfg.Path != "testdata/configs/full.yaml" || cfg.Log.Level != "debug" || cfg.Log.Format != "json" || cfg.HTTP.Addr != "127.0.0.1:9090" {
		t.Fatalf("log/http: %+v %+v", cfg.Log, cfg.HTTP)
	}
	wantRedis := d.Redis
	wantRedis.Nodes = []Node{{"10.0.0.1:6379"}, {"10.0.0.2:6379"}, {"10.0.0.3:6379"}}
	wantRedis.Username, wantRedis.Password, wantRedis.TLS, wantRedis.KeyPrefix = "slotlock", "hunter2", true, "prod"
	wantRedis.DialTimeout, wantRedis.OpTimeout = 500*time.Millisecond, 50*time.Millisecond
	if !reflect.DeepEqual(cfg.Redis, wantRedis) {
		t.Fatalf("redis = %+v", cfg.Redis)
	}
	wantLock := d.Lock
	wantLock.TTL, wantLock.MaxClockSkew = 20*time.Second, time.Second
	if cfg.Lock != wantLock || cfg.Shutdown.Grace != 10*time.Second {
		t.Fatalf("lock/shutdown: %+v %+v", cfg.Lock, cfg.Shutdown)
	}
	if len(cfg.Jobs) != 3 {
		t.Fatalf("%d jobs", len(cfg.Jobs))
	}
	r := cfg.Jobs[0]
	if r.Name != "nightly-report" || r.Spec != "30 2 * * *" || r.Timezone != "Europe/Berlin" || r.Plugin != "exec" ||
		!r.Enabled || r.Timeout != 20*time.Minute || r.Overlap != "forbid" ||
		r.Misfire != (Misfire{Policy: "run_once", Deadline: 2 * time.Hour, Max: 10}) || r.Retry != (Retry{Max: 2, Backoff: 30 * time.Second}) ||
		r.Jitter != 10*time.Minute {
		t.Fatalf("job 0: %+v", r)
	}
	if r.Location == nil || r.Location.String() != "Europe/Berlin" || r.Schedule == nil || r.Runner == nil {
		t.Fatalf("job 0 not built: loc %v schedule %v runner %v", r.Location, r.Schedule, r.Runner)
	}
	// The schedule is evaluated in the job's zone: 02:30 Berlin is 00:30 UTC in summer.
	next := r.Schedule.Next(time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC))
	if !next.Equal(time.Date(2026, 7, 2, 0, 30, 0, 0, time.UTC)) {
		t.Fatalf("next slot of 30 2 * * * Berlin after 2026-07-01 12:00Z = %v", next.UTC())
	}
	if w := cfg.Jobs[1]; w.Overlap != "allow" || w.Location.String() != "America/New_York" || w.Params["method"] != "PUT" {
		t.Fatalf("job 1: %+v", w)
	}
	if h := cfg.Jobs[2]; h.Enabled || h.Name != "hourly.beat_1" {
		t.Fatalf("job 2: %+v", h)
	}
	if j, ok := cfg.Job("cache-warmup"); !ok || j.Plugin != "http" {
		t.Fatal("Config.Job lookup failed")
	}
	if _, ok := cfg.Job("nope"); ok {
		t.Fatal("Config.Job found a missing job")
	}
}

func TestRepoAndSeedConfigsAreValid(t *testing.T) {
	for _, f := range []string{"contract.yaml", "entra.yaml", "full.yaml", "repo.yaml"} {
		if _, err := Load(filepath.Join("testdata/configs", f), nil); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if _, err := Load("testdata/configs/many-errors.yaml", nil); err == nil {
		t.Error("many-errors.yaml is valid")
	}
}

func TestJobDefaults(t *testing.T) {
	cfg := mustLoad(t, minimalJob+`
  - name: partial
    schedule: "0 * * * *"
    plugin: log
    misfire: {policy: run_once}
    retry: {max: 3}
    timeout: ~
    params: {message: x}
`)
	want := DefaultJob()
	if want.Timezone != "UTC" || !want.Enabled || want.Timeout != time.Hour || want.Overlap != "forbid" ||
		want.Misfire.Policy != "skip" || want.Misfire.Deadline != 10*time.Minute || want.Misfire.Max != 10 || want.Retry.Max != 0 || want.Retry.Backoff != 5*time.Second ||
		want.Jitter != 0 {
		t.Fatalf("DefaultJob differs from the contract: %+v", want)
	}
	j := cfg.Jobs[0]
	if j.Timezone != "UTC" || j.Location != time.UTC || !j.Enabled || j.Timeout != time.Hour || j.Overlap != "forbid" ||
		j.Misfire != want.Misfire || j.Retry != want.Retry {
		t.Fatalf("defaults not applied: %+v", j)
	}
	p := cfg.Jobs[1]
	if p.Misfire.Policy != "run_once" || p.Misfire.Deadline != want.Misfire.Deadline || p.Misfire.Max != want.Misfire.Max || p.Retry.Max != 3 ||
		p.Retry.Backoff != want.Retry.Backoff || p.Timeout != time.Hour {
		t.Fatalf("partial nested settings must keep the other defaults: %+v", p)
	}
}

func TestEnvOverrides(t *testing.T) {
	yaml := `
lock: {ttl: 40s}
redis:
  nodes: [{addr: "file:1"}]
  password: from-file
` + minimalJob + `
  - name: nightly-report
    schedule: "@daily"
    plugin: exec
    params: {command: [/bin/true], env: {Mixed_Case: a}}
`
	cfg := mustLoad(t, yaml,
		"SLOTLOCK_LOCK__TTL=20s",
		"SLOTLOCK_LOCK__MAX_CLOCK_SKEW=500ms",
		"SLOTLOCK_REDIS__PASSWORD=from-env",
		"SLOTLOCK_REDIS__NODES=h1:6380, h2:6380,h3:6380,",
		"SLOTLOCK_REDIS__TLS=true",
		"SLOTLOCK_REDIS__KEY_PREFIX=blue",
		"SLOTLOCK_LOG__LEVEL=debug",
		"SLOTLOCK_SHUTDOWN__GRACE=0s",
		"SLOTLOCK_HTTP__ADDR=",
		"SLOTLOCK_JOBS__0__ENABLED=false",
		"SLOTLOCK_JOBS__nightly-report__RETRY__MAX=2",
		"SLOTLOCK_JOBS__NIGHTLY-REPORT__TIMEOUT=5m",
		"SLOTLOCK_JOBS__heartbeat__PARAMS__message=overridden",
		"SLOTLOCK_JOBS__1__PARAMS__env__Mixed_Case=b",
		// Not configuration keys: runtime settings and the exec plugin's job environment.
		"SLOTLOCK_CONFIG=/elsewhere.yaml", "SLOTLOCK_REPLICA=r1", "SLOTLOCK_CLOCK_OFFSET=-800ms",
		"SLOTLOCK_JOB=x", "SLOTLOCK_SLOT=manual", "SLOTLOCK_RUN_ID=r", "SLOTLOCK_FENCING_TOKEN=3", "SLOTLOCK_ATTEMPT=1",
		"OTHER_LOCK__TTL=1s", "not-a-pair",
	)
	if cfg.Lock.TTL != 20*time.Second || cfg.Lock.MaxClockSkew != 500*time.Millisecond {
		t.Errorf("lock = %+v", cfg.Lock)
	}
	if cfg.Redis.Password != "from-env" || !cfg.Redis.TLS || cfg.Redis.KeyPrefix != "blue" {
		t.Errorf("redis = %+v", cfg.Redis)
	}
	if want := []Node{{"h1:6380"}, {"h2:6380"}, {"h3:6380"}}; !reflect.DeepEqual(cfg.Redis.Nodes, want) {
		t.Errorf("nodes = %v, want %v", cfg.Redis.Nodes, want)
	}
	if cfg.Log.Level != "debug" || cfg.Shutdown.Grace != 0 || cfg.HTTP.Addr != "" {
		t.Errorf("log %+v shutdown %+v http %+v", cfg.Log, cfg.Shutdown, cfg.HTTP)
	}
	hb, nr := cfg.Jobs[0], cfg.Jobs[1]
	if hb.Enabled || hb.Params["message"] != "overridden" {
		t.Errorf("heartbeat = %+v", hb)
	}
	if nr.Retry.Max != 2 || nr.Timeout != 5*time.Minute || !nr.Enabled {
		t.Errorf("nightly-report = %+v", nr)
	}
	if env := nr.Params["env"].(map[string]any); env["Mixed_Case"] != "b" {
		t.Errorf("params below params keep their case: %v", env)
	}
}

func TestEnvOverrideErrors(t *testing.T) {
	cases := []struct {
		env  string
		want string
	}{
		{"SLOTLOCK_LOCK__TTL=soon", `lock.ttl: invalid duration "soon"`},
		{"SLOTLOCK_LOCK__TLL=1s", `unknown key lock.tll (did you mean "ttl"?) (env SLOTLOCK_LOCK__TLL)`},
		{"SLOTLOCK_LOKC__TTL=1s", `unknown key lokc (did you mean "lock"?) (env SLOTLOCK_LOKC__TTL)`},
		{"SLOTLOCK_REDIS__TLS=maybe", `redis.tls: expected true or false, got "maybe" (env SLOTLOCK_REDIS__TLS)`},
		{"SLOTLOCK_LOCK____TTL=1s", `malformed override`},
		{"SLOTLOCK_JOBS__7__ENABLED=false", `jobs: no job with index or name "7" to override (env SLOTLOCK_JOBS__7__ENABLED)`},
		{"SLOTLOCK_JOBS__ghost__ENABLED=false", `no job with index or name "ghost"`},
		{"SLOTLOCK_JOBS__0=x", `a job override names the job and a key`},
		{"SLOTLOCK_JOBS__0__RETRY__MAX=lots", `jobs[0] "heartbeat": retry.max: expected an integer, got string "lots" (jobs[0].retry.max, env SLOTLOCK_JOBS__0__RETRY__MAX)`},
		{"SLOTLOCK_LOCK=x\nSLOTLOCK_LOCK__TTL=1s", `lock: conflicting overrides: SLOTLOCK_LOCK sets lock, SLOTLOCK_LOCK__TTL sets a key inside it`},
		{"SLOTLOCK_LOCK__TTL__X=1\nSLOTLOCK_LOCK__TTL=2s", `lock.ttl: conflicting overrides`},
		{"SLOTLOCK_JOBS__0__PARAMS=1\nSLOTLOCK_JOBS__0__PARAMS__A=2", `jobs[0].params: conflicting overrides`},
		{"SLOTLOCK_JOBS__0__SCHEDUL=x", `jobs[0] "heartbeat": unknown key jobs[0].schedul (did you mean "schedule"?) (env SLOTLOCK_JOBS__0__SCHEDUL)`},
	}
	for _, tc := range cases {
		lines := loadErrs(t, minimalJob, strings.Split(tc.env, "\n")...)
		if !containsLine(lines, tc.want) {
			t.Errorf("%s: errors\n  %s\nlack %q", tc.env, strings.Join(lines, "\n  "), tc.want)
		}
	}
}

func containsLine(lines []string, want string) bool {
	for _, l := range lines {
		if strings.Contains(l, want) {
			return true
		}
	}
	return false
}

func TestPasswordFile(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "pw")
	os.WriteFile(pw, []byte("s3cret\n"), 0o600)
	cfg := mustLoad(t, "redis: {password_file: "+pw+"}\n")
	if cfg.Redis.Password != "s3cret" || cfg.Redis.PasswordFile != pw {
		t.Fatalf("password_file: %+v", cfg.Redis)
	}
	crlf := filepath.Join(dir, "crlf")
	os.WriteFile(crlf, []byte("with space \r\n"), 0o600)
	if cfg := mustLoad(t, "redis: {password_file: "+crlf+"}\n"); cfg.Redis.Password != "with space " {
		t.Fatalf("only the trailing newline is trimmed: %q", cfg.Redis.Password)
	}
	// The file may be named from the environment too.
	if cfg := mustLoad(t, "", "SLOTLOCK_REDIS__PASSWORD_FILE="+pw); cfg.Redis.Password != "s3cret" {
		t.Fatalf("env password_file: %q", cfg.Redis.Password)
	}

	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte("\n"), 0o600)
	for yaml, want := range map[string]string{
		"redis: {password: x, password_file: " + pw + "}": "redis.password_file: set either redis.password or redis.password_file, not both",
		"redis: {password_file: " + dir + "/missing}":     "redis.password_file: cannot read the password: open " + dir + "/missing",
		"redis: {password_file: " + empty + "}":           `redis.password_file "` + empty + `": the file is empty`,
	} {
		if lines := loadErrs(t, yaml); !containsLine(lines, want) {
			t.Errorf("%s: %v, want %q", yaml, lines, want)
		}
	}
	if lines := loadErrs(t, "redis: {password_file: "+pw+"}", "SLOTLOCK_REDIS__PASSWORD=y"); !containsLine(lines, "not both") {
		t.Errorf("env password + file password_file: %v", lines)
	}
}

func TestRedacted(t *testing.T) {
	cfg, err := Load("testdata/configs/full.yaml", []string{"SLOTLOCK_REDIS__PASSWORD=env-secret"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(cfg.Redacted())
	if err != nil {
		t.Fatal(err)
	}
	out := string(b)
	for _, secret := range []string{"env-secret", "hunter2", "s3cret", "tok-123", "k-456"} {
		if strings.Contains(out, secret) {
			t.Errorf("Redacted shows %q:\n%s", secret, out)
		}
	}
	for _, visible := range []string{`"password":"***"`, `"Authorization":"***"`, `"X-Api-Key":"***"`, `"DB_PASSWORD":"***"`,
		`"REPORT_BUCKET":"***"`, `"Accept":"application/json"`, `"ttl":"20s"`, `"schedule":"30 2 * * *"`,
		`"timezone":"Europe/Berlin"`, `"addr":"10.0.0.1:6379"`, `"username":"slotlock"`, `"deadline":"2h0m0s"`} {
		if !strings.Contains(out, visible) {
			t.Errorf("Redacted lacks %s:\n%s", visible, out)
		}
	}
	// The config itself keeps the real values.
	if cfg.Redis.Password != "env-secret" || cfg.Jobs[1].Params["headers"].(map[string]any)["Authorization"] != "Bearer tok-123" {
		t.Fatal("Redacted modified the config")
	}
	if empty := (&Config{}).Redacted().(map[string]any)["redis"].(map[string]any)["password"]; empty != "" {
		t.Fatalf("an unset password should show as empty, got %v", empty)
	}
}

func TestLoadedJobsRun(t *testing.T) {
	cfg := mustLoad(t, minimalJob)
	if err := jobs.Execute(context.Background(), cfg.Jobs[0].Runner, jobs.Run{Job: "heartbeat", Manual: true,
		Logger: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatal(err)
	}
}

func TestMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"), nil)
	var errs Errors
	if !errors.As(err, &errs) || !strings.Contains(err.Error(), "cannot read configuration") || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

// An unquoted all-digit password is a type error; the message (stderr,
// `validate`) must not carry the password, nor a job's header secret.
func TestMistypedSecretNotInErrors(t *testing.T) {
	lines := loadErrs(t, `
redis: {password: 12345678}
jobs:
  - name: hook
    schedule: "@every 10s"
    plugin: http
    params: {url: "http://127.0.0.1/", headers: {Authorization: 987654321}}
`)
	all := strings.Join(lines, "\n")
	for _, secret := range []string{"12345678", "987654321"} {
		if strings.Contains(all, secret) {
			t.Errorf("errors show the secret %s:\n%s", secret, all)
		}
	}
	for _, want := range []string{"redis.password: expected a string, got an integer", "params.headers.Authorization: expected a string"} {
		if !strings.Contains(all, want) {
			t.Errorf("errors lack %q:\n%s", want, all)
		}
	}
}
