package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

const threeNodes = `
redis:
  nodes: [{addr: "10.0.0.1:6379"}, {addr: "10.0.0.2:6379"}, {addr: "10.0.0.3:6379"}]
`

// TestHostileInputs: the bad inputs of issue #36 each get an error at load
// time that names the key path, the job (for a job's key) and where the
// value came from, all on one line, and none makes Load hang or read
// without bound.
func TestHostileInputs(t *testing.T) {
	longName := strings.Repeat("n", 70_000)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		yaml string
		env  []string
		// each fragment must appear together in one error line
		want [][]string
	}{
		// Fail closed: an override that names no node is never "in-process locks".
		{"nodes override empty", threeNodes, []string{"SLOTLOCK_REDIS__NODES="},
			[][]string{{"redis.nodes: SLOTLOCK_REDIS__NODES names no node", "would drop the 3 node(s) the file names", "(env SLOTLOCK_REDIS__NODES)"}}},
		{"nodes override blank", threeNodes, []string{"SLOTLOCK_REDIS__NODES= "},
			[][]string{{"redis.nodes: SLOTLOCK_REDIS__NODES names no node", "would drop the 3 node(s)"}}},
		{"nodes override comma", threeNodes, []string{"SLOTLOCK_REDIS__NODES=,"},
			[][]string{{"redis.nodes: SLOTLOCK_REDIS__NODES names no node", "would drop the 3 node(s)"}}},
		{"nodes override commas", threeNodes, []string{"SLOTLOCK_REDIS__NODES=,,,"},
			[][]string{{"redis.nodes: SLOTLOCK_REDIS__NODES names no node", "would drop the 3 node(s)"}}},
		{"nodes override commas and blanks", threeNodes, []string{"SLOTLOCK_REDIS__NODES= , ,"},
			[][]string{{"redis.nodes: SLOTLOCK_REDIS__NODES names no node"}}},
		{"nodes override empty, no file nodes", minimalJob, []string{"SLOTLOCK_REDIS__NODES="},
			[][]string{{"redis.nodes: SLOTLOCK_REDIS__NODES names no node", "unset it for in-process locks", "(env SLOTLOCK_REDIS__NODES)"}}},

		// Bounds: each names the key path and the file position.
		{"lock.ttl huge", "lock: {ttl: 2562047h}\n", nil,
			[][]string{{"lock.ttl: must be at most 1h0m0s", "got 2562047h0m0s", "config.yaml:1:8"}}},
		{"key_prefix 100k", "redis: {key_prefix: " + strings.Repeat("k", 100_000) + "}\n", nil,
			[][]string{{"redis.key_prefix \"kkkk", "… (100000 bytes)", "too long: at most 64 characters, got 100000", "config.yaml:1:9"}}},
		{"key_prefix control", "redis: {key_prefix: \"a\\x1bb\"}\n", nil,
			[][]string{{`redis.key_prefix "a\x1bb": may hold only letters, digits and . _ : / -`}}},
		{"dial_timeout huge", "redis: {dial_timeout: 10h}\n", nil,
			[][]string{{"redis.dial_timeout: must be at most 1m0s", "config.yaml:1:9"}}},
		{"op_timeout huge", "redis: {op_timeout: 1h}\nlock: {ttl: 1h}\n", nil,
			[][]string{{"redis.op_timeout: must be at most 10s", "config.yaml:1:9"}}},
		{"shutdown.grace huge", "shutdown: {grace: 1000h}\n", nil,
			[][]string{{"shutdown.grace: must be at most 1h0m0s", "config.yaml:1:12"}}},
		{"retry spin", minimalJob + "    retry: {max: 1e9, backoff: 1ns}\n", nil, [][]string{
			{`jobs[0] "heartbeat": retry.max: must be at most 100`, "jobs[0].retry.max, ", "config.yaml:7:"},
			{`jobs[0] "heartbeat": retry.backoff: must be at least 10ms`, "got 1ns", "jobs[0].retry.backoff, ", "config.yaml:7:"},
		}},
		{"retry backoff huge", minimalJob + "    retry: {max: 1, backoff: 48h}\n", nil, [][]string{
			{`jobs[0] "heartbeat": retry.backoff: must be at most 1h0m0s`, "config.yaml:7:"}}},
		{"job timeout huge", minimalJob + "    timeout: 100000h\n", nil, [][]string{
			{`jobs[0] "heartbeat": timeout: must be at most 168h0m0s`, "(jobs[0].timeout, ", "config.yaml:7:"}}},
		{"job name 70 KB", "jobs:\n  - name: " + longName + "\n    schedule: '@every 10s'\n    plugin: log\n    params: {message: x}\n", nil,
			[][]string{{`jobs[0] "nnnn`, "… (70000 bytes)", "name: must match", "(jobs[0].name, ", "config.yaml:2:"}}},

		// exec: found at validate time, naming the field.
		{"exec NUL in env value", "jobs:\n  - name: job-a\n    schedule: '@daily'\n    plugin: exec\n    params: {command: [/bin/true], env: {K: \"a\\0b\"}}\n", nil,
			[][]string{{`jobs[0] "job-a": params.env.K: the value contains a NUL byte`, "(jobs[0].params.env.K, ", "config.yaml:"}}},
		{"exec NUL in argument", "jobs:\n  - name: job-a\n    schedule: '@daily'\n    plugin: exec\n    params: {command: [/bin/echo, \"a\\0b\"]}\n", nil,
			[][]string{{`jobs[0] "job-a": params.command[1]: contains a NUL byte`, "(jobs[0].params.command[1], ", "config.yaml:"}}},
		{"exec dir missing", "jobs:\n  - name: job-a\n    schedule: '@daily'\n    plugin: exec\n    params: {command: [/bin/true], dir: /nonexistent/dir}\n", nil,
			[][]string{{`jobs[0] "job-a": params.dir: no such directory: /nonexistent/dir`, "(jobs[0].params.dir, ", "config.yaml:5:"}}},
		{"exec dir a file", "jobs:\n  - name: job-a\n    schedule: '@daily'\n    plugin: exec\n    params: {command: [/bin/true], dir: " + exe + "}\n", nil,
			[][]string{{`jobs[0] "job-a": params.dir: not a directory`}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lines := loadErrs(t, tc.yaml, tc.env...)
			for _, frags := range tc.want {
				if !anyLineHasAll(lines, frags) {
					t.Errorf("no error line holds all of %q:\n%s", frags, strings.Join(lines, "\n"))
				}
			}
			for _, l := range lines {
				if len(l) > 1000 {
					t.Errorf("error line of %d bytes: an echo is not bounded", len(l))
				}
			}
		})
	}
}

func anyLineHasAll(lines, frags []string) bool {
	for _, l := range lines {
		all := true
		for _, f := range frags {
			all = all && strings.Contains(l, f)
		}
		if all {
			return true
		}
	}
	return false
}

// TestHostileFiles: the configuration file and redis.password_file must be
// regular files of bounded size. A FIFO with no writer would block the
// read for ever, a device never ends; each is refused before a byte is
// read, naming the path (and, for the password, the key).
func TestHostileFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("# "+strings.Repeat("x", MaxConfigSize)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bigPassword := filepath.Join(dir, "big-password")
	if err := os.WriteFile(bigPassword, []byte(strings.Repeat("p", MaxPasswordSize+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	pwDir := filepath.Join(dir, "secrets")
	if err := os.Mkdir(pwDir, 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, config string
		want         []string
	}{
		{"config FIFO", fifo, []string{"cannot read configuration: " + fifo + " is a named pipe (FIFO), not a regular file"}},
		{"config /dev/zero", "/dev/zero", []string{"cannot read configuration: /dev/zero is a character device, not a regular file"}},
		{"config directory", dir, []string{"cannot read configuration: " + dir + " is a directory, not a regular file"}},
		{"config over 4 MiB", big, []string{"cannot read configuration: " + big + " is larger than the limit of 4 MiB"}},
		{"password_file FIFO", writeConfig(t, "redis: {password_file: "+fifo+"}\n"),
			[]string{"redis.password_file: cannot read the password: " + fifo + " is a named pipe (FIFO), not a regular file", "config.yaml:1:9"}},
		{"password_file /dev/zero", writeConfig(t, "redis: {password_file: /dev/zero}\n"),
			[]string{"redis.password_file: cannot read the password: /dev/zero is a character device, not a regular file"}},
		{"password_file directory", writeConfig(t, "redis: {password_file: "+pwDir+"}\n"),
			[]string{"redis.password_file: cannot read the password: " + pwDir + " is a directory, not a regular file"}},
		{"password_file over 4 KiB", writeConfig(t, "redis: {password_file: "+bigPassword+"}\n"),
			[]string{"redis.password_file: cannot read the password: " + bigPassword + " is larger than the limit of 4 KiB"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			type result struct {
				cfg *Config
				err error
			}
			done := make(chan result, 1)
			go func() {
				cfg, err := Load(tc.config, nil)
				done <- result{cfg, err}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Load blocked reading the file")
			}
			if r.err == nil || r.cfg != nil {
				t.Fatalf("Load accepted %s", tc.config)
			}
			msg := r.err.Error()
			if strings.Contains(msg, "readable by every user") {
				t.Errorf("a non-regular file judged by its mode: %s", msg)
			}
			if !anyLineHasAll(strings.Split(msg, "\n"), tc.want) {
				t.Errorf("error lacks %q:\n%s", tc.want, msg)
			}
		})
	}
}

// TestIsEmpty: the files the command refuses as empty, at start and on
// reload alike; Load itself takes them as the defaults (TestLoadDefaults).
func TestIsEmpty(t *testing.T) {
	for text, want := range map[string]bool{
		"": true, "\n  \n": true, "# nothing\n": true, "# a\n---\n# b\n": true, "~\n": true, "---\n...\n": true,
		"log: {level: info}\n": false, "jobs: []\n": false, "[1, 2]\n": false, "bad: [\n": false,
		// Told by the first key, and not: a document start with content
		// on its line, a null after comments, an indented key, a key with
		// no blank after its colon (a plain scalar).
		"# a\n---\njobs:\n  - name: x\n": false, "--- ~\n": true, "---   # c\n~\n": true, "--- {a: 1}\n": false,
		"  ~\n": true, "  log: {}\n": false, "a:b\n": false, "null\n": true, "log:\n": false,
		// A flow collection first (a JSON file), told without the parse.
		"{\"jobs\": []}\n": false, "{}": false, "# c\n  {\"a\": 1}\n": false, "{\n": false, "[\n": false,
	} {
		if got := IsEmpty([]byte(text)); got != want {
			t.Errorf("IsEmpty(%q) = %v, want %v", text, got, want)
		}
	}
}
