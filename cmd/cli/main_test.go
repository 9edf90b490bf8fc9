package cli_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/slotlock/slotlock/internal/secrettest"
)

// binary is the slotlock binary built once for this package's tests, so
// they run it as a user would.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "slotlock-cli-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "slotlock")
	build := exec.Command("go", "build", "-race", "-o", binary, "github.com/slotlock/slotlock/cmd/slotlock")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building slotlock:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	// The secrets scan of everything captured, then the goroutine check.
	os.Exit(secrettest.AfterTests(code))
}

// writeConfig writes a YAML file into a fresh temp dir and returns its path.
func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// slotlock runs the binary to completion and returns stdout, stderr and
// the exit code.
func slotlock(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	secrettest.Capture(out.Bytes())
	secrettest.Capture(errb.Bytes())
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// freeAddr returns a loopback address with a port nobody listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// replicaProc is a `slotlock run` process whose JSON log lines the test
// can wait for.
type replicaProc struct {
	t    *testing.T
	cmd  *exec.Cmd
	mu   sync.Mutex
	logs []map[string]any
	raw  bytes.Buffer
	done chan struct{}
	err  error
}

func startReplica(t *testing.T, config string, env ...string) *replicaProc {
	t.Helper()
	cmd := exec.Command(binary, "run", "--config", config)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &replicaProc{t: t, cmd: cmd, done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			var m map[string]any
			secrettest.Capture(line)
			p.mu.Lock()
			p.raw.Write(line)
			p.raw.WriteByte('\n')
			if json.Unmarshal(line, &m) == nil {
				p.logs = append(p.logs, m)
			}
			p.mu.Unlock()
		}
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
		if t.Failed() {
			t.Logf("replica log:\n%s", p.rawLog())
		}
	})
	return p
}

func (p *replicaProc) rawLog() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.raw.String()
}

// events returns the log lines whose event field is ev.
func (p *replicaProc) events(ev string) []map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []map[string]any
	for _, m := range p.logs {
		if m["event"] == ev {
			out = append(out, m)
		}
	}
	return out
}

// waitFor polls until cond holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop sends SIGTERM to the replica's PID (as a container runtime does)
// and returns the exit code and how long the exit took.
func (p *replicaProc) stop(t *testing.T, within time.Duration) (int, time.Duration) {
	t.Helper()
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(within):
		t.Fatalf("replica did not exit within %v of SIGTERM", within)
	}
	code := 0
	if ee, ok := p.err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if p.err != nil {
		t.Fatal(p.err)
	}
	return code, time.Since(start)
}

func httpGet(url string) (int, string) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// fleetYAML is the configuration of a replica of a test fleet on the
// Redis nodes addrs — JSON lines at info, no ops server, a 1 s shutdown
// grace — for a jobs: list to follow.
func fleetYAML(addrs []string) string {
	return redisNodesYAML(addrs) + `
log: {format: json, level: info}
http: {addr: ""}
shutdown: {grace: 1s}
`
}

func redisNodesYAML(addrs []string) string {
	var b strings.Builder
	b.WriteString("redis:\n  nodes:\n")
	for _, a := range addrs {
		fmt.Fprintf(&b, "    - addr: %q\n", a)
	}
	return b.String()
}
