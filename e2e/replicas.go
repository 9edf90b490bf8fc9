//go:build linux

package e2e

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Starting and stopping replicas (and `slotlock trigger`).

// Replica is one `slotlock run` process (the current incarnation of a
// replica name; Restart starts a new process with the same name).
type Replica struct {
	Name     string
	Offset   time.Duration // SLOTLOCK_CLOCK_OFFSET
	HTTPAddr string        // with Spec.UI: its ops server (host:port)
	c        *Cluster
	p        *proc
	logs     *logPipe // with Spec.PipedLogs
}

// StartReplica starts `slotlock run` as replica name (a new process each
// call; a name already running is an error) and waits until it has
// logged its first line.
func (c *Cluster) StartReplica(name string, offset time.Duration) *Replica {
	c.t.Helper()
	c.mu.Lock()
	if r := c.replicas[name]; r != nil && r.p != nil && r.p.running() {
		c.mu.Unlock()
		c.t.Fatalf("replica %s is already running", name)
	}
	c.mu.Unlock()
	logPath := filepath.Join(c.dir, name+".log")
	before := fileSize(logPath)
	cmd := exec.Command(c.bin.Slotlock, "run", "--config", c.configFor(name))
	cmd.Dir = c.dir
	logs, started := attachOutput(c.t, cmd, logPath, c.spec.PipedLogs)
	env, httpAddr := c.replicaEnv(name, offset)
	cmd.Env = env
	p, err := startProc("replica "+name, cmd)
	started(p)
	if err != nil {
		c.t.Fatalf("start replica %s: %v", name, err)
	}
	r := &Replica{Name: name, Offset: offset, HTTPAddr: httpAddr, c: c, p: p, logs: logs}
	c.mu.Lock()
	if _, ok := c.replicas[name]; !ok {
		c.order = append(c.order, name)
	}
	c.replicas[name] = r
	c.mu.Unlock()
	r.waitFirstLine(logPath, before)
	return r
}

// attachOutput points cmd's stdout and stderr at the replica's log file:
// directly, or when piped (Spec.PipedLogs) through a pipe the suite
// drains into it (returned; nil otherwise). Call started with the process
// once it started (nil: it did not): it lets go of the suite's own
// descriptor.
func attachOutput(t testing.TB, cmd *exec.Cmd, logPath string, piped bool) (logs *logPipe, started func(*proc)) {
	t.Helper()
	lf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if !piped {
		// The child has its own descriptor once started.
		cmd.Stdout, cmd.Stderr = lf, lf
		return nil, func(*proc) { _ = lf.Close() }
	}
	if logs, err = newLogPipe(lf); err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logs.w, logs.w
	return logs, logs.closeWriterAfter
}

// replicaEnv is a replica's environment: its name, clock offset, Redis
// seeds (with shards) or links (Spec.Links) and ops address (with Spec.UI, returned), then this
// process's environment without slotlock's own variables.
func (c *Cluster) replicaEnv(name string, offset time.Duration) (env []string, httpAddr string) {
	env = []string{"SLOTLOCK_REPLICA=" + name}
	if offset != 0 {
		env = append(env, "SLOTLOCK_CLOCK_OFFSET="+offset.String())
	}
	if c.Shards != nil {
		// One seed per Redlock node: the replica finds the other shards.
		env = append(env, "SLOTLOCK_REDIS__NODES="+strings.Join(c.Shards.Seeds(), ","))
	}
	if c.Links != nil {
		var addrs []string
		for _, px := range c.Links.of(name) {
			addrs = append(addrs, px.Addr())
		}
		env = append(env, "SLOTLOCK_REDIS__NODES="+strings.Join(addrs, ","))
	}
	if c.spec.UI {
		httpAddr = freeLoopbackAddr(c.t)
		env = append(env, "SLOTLOCK_HTTP__ADDR="+httpAddr)
	}
	return append(env, cleanEnv()...), httpAddr
}

// waitFirstLine waits until the replica's log grew past before. Its first
// line comes once the config is loaded and validated: with thousands of
// jobs, on a host its peers already load past its capacity (the scale
// benchmark's overload points), that takes longer.
func (r *Replica) waitFirstLine(logPath string, before int64) {
	t := r.c.t
	t.Helper()
	wait := 5*time.Second + time.Duration(len(r.c.spec.Jobs))*2*time.Millisecond
	deadline := time.Now().Add(wait)
	for fileSize(logPath) == before {
		if !r.p.running() {
			t.Fatalf("replica %s exited with %d at start:\n%s", r.Name, r.p.exitCode(), tail(logPath, 20))
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica %s logged nothing within %v", r.Name, wait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func fileSize(p string) int64 {
	st, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return st.Size()
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Replica returns the current incarnation of name.
func (c *Cluster) Replica(name string) *Replica {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.replicas[name]
}

// Running lists the names of the running replicas.
func (c *Cluster) Running() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, n := range c.order {
		if r := c.replicas[n]; r.p.running() {
			out = append(out, n)
		}
	}
	return out
}

// PID is the replica process's pid.
func (r *Replica) PID() int { return r.p.pid() }

// Running reports whether the process is alive (frozen counts).
func (r *Replica) Running() bool { return r.p.running() }

// Stop sends SIGTERM to the replica's pid and waits; it records an exit
// problem (the scenario fails at Check) unless the process exits 0 within
// shutdown.grace plus one second of process teardown.
func (r *Replica) Stop() (time.Duration, int) {
	limit := r.c.spec.Grace + time.Second
	d, err := r.p.terminate(limit + 5*time.Second)
	code := r.p.exitCode()
	var problem string
	switch {
	case err != nil:
		problem = err.Error()
	case code != 0:
		problem = fmt.Sprintf("replica %s exited %d after SIGTERM (want 0)", r.Name, code)
	case d > limit:
		problem = fmt.Sprintf("replica %s took %v to exit after SIGTERM (shutdown.grace %v)", r.Name, d.Round(time.Millisecond), r.c.spec.Grace)
	}
	if problem != "" {
		r.c.mu.Lock()
		r.c.exitErrs = append(r.c.exitErrs, problem+"\n"+tail(filepath.Join(r.c.dir, r.Name+".log"), 8))
		r.c.mu.Unlock()
	}
	return d, code
}

// StopAll stops every running replica with SIGTERM, in parallel.
func (c *Cluster) StopAll() {
	var wg sync.WaitGroup
	for _, n := range c.Running() {
		r := c.Replica(n)
		wg.Add(1)
		go func() { defer wg.Done(); r.Stop() }()
	}
	wg.Wait()
}

func (c *Cluster) killAll() {
	c.mu.Lock()
	var ps []*proc
	for _, r := range c.replicas {
		ps = append(ps, r.p)
	}
	c.mu.Unlock()
	for _, p := range ps {
		p.kill()
	}
}

// StartAll starts the named replicas (offset 0) one after the other and
// returns the time the last one was up.
func (c *Cluster) StartAll(names ...string) time.Time {
	c.t.Helper()
	for _, n := range names {
		c.StartReplica(n, 0)
	}
	return time.Now()
}

// Command runs `slotlock ARGS[0] --config FILE ARGS[1:]...` as replica
// "command" (its log lines go to command.log, which the checker reads) and
// returns its standard output and exit code.
func (c *Cluster) Command(args ...string) (string, int) {
	c.t.Helper()
	lf := c.appendLog("command.log")
	defer lf.Close()
	var out bytes.Buffer
	code := c.slotlock("command", &out, lf, args[0], args[1:]...)
	return out.String(), code
}

// Slotlock runs `slotlock CMD --config FILE ARGS...` against the cluster as
// replica name (SLOTLOCK_REPLICA) and returns its stdout, stderr and exit
// code.
func (c *Cluster) Slotlock(name, cmdName string, args ...string) (string, string, int) {
	c.t.Helper()
	var out, errb bytes.Buffer
	code := c.slotlock(name, &out, &errb, cmdName, args...)
	return out.String(), errb.String(), code
}

// slotlock runs `slotlock CMD --config FILE ARGS...` as replica name, its
// output to stdout and stderr, and returns its exit code; it fails the
// test when the command does not finish within a minute.
func (c *Cluster) slotlock(name string, stdout, stderr io.Writer, cmdName string, args ...string) int {
	c.t.Helper()
	cmd := exec.Command(c.bin.Slotlock, append([]string{cmdName, "--config", c.config}, args...)...)
	cmd.Dir = c.dir
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.Env = append(cleanEnv(), "SLOTLOCK_REPLICA="+name)
	p, err := startProc("slotlock "+cmdName, cmd)
	if err != nil {
		c.t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		p.kill()
		c.t.Fatalf("slotlock %s did not finish within a minute", cmdName)
	}
	return p.exitCode()
}

// appendLog opens a log file of the cluster's directory for appending.
func (c *Cluster) appendLog(name string) *os.File {
	c.t.Helper()
	lf, err := os.OpenFile(filepath.Join(c.dir, name), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	return lf
}

// cleanEnv is this process's environment without slotlock's own
// variables, for the commands the suite starts.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SLOTLOCK_") && !strings.HasPrefix(kv, "CONTAINER_APP_") {
			env = append(env, kv)
		}
	}
	return env
}

// Trigger runs `slotlock trigger --config FILE job` as replica "trigger"
// (its log goes to trigger.log, so the checker sees it) and returns its
// exit code.
func (c *Cluster) Trigger(job string) int {
	c.t.Helper()
	lf := c.appendLog("trigger.log")
	defer lf.Close()
	return c.slotlock("trigger", lf, lf, "trigger", job)
}
