//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slotlock/slotlock/locking/redistest"
)

// Binaries are the programs the suite runs; TestMain builds them once.
type Binaries struct {
	Slotlock  string // go build ./cmd/slotlock
	LedgerJob string // go build ./e2e/internal/ledgerjob
}

// JobDef is one job of a scenario: an exec job running ledgerjob.
type JobDef struct {
	Name     string
	Schedule string        // 6 fields, UTC
	Sleep    time.Duration // how long each run takes
	Forbid   bool          // overlap: forbid (else allow)
	Misfire  string        // skip (default) | run_once
	Deadline time.Duration // misfire deadline; default 10m
	Timeout  time.Duration // default 1m
}

// Spec is the cluster a scenario runs on.
type Spec struct {
	Nodes      int // Redis nodes; default 3
	ProxyNode  int // index of the node reached through a Proxy; -1 none
	AppendOnly bool
	TTL        time.Duration // lock.ttl; default 3s
	Skew       time.Duration // lock.max_clock_skew; default 1s
	Grace      time.Duration // shutdown.grace; default 5s
	OpTimeout  time.Duration // redis.op_timeout; default 100ms
	Jobs       []JobDef
}

// Cluster is one scenario's world: Redis nodes, an optional proxy, the
// replicas, the ledger, and what the scenario declared about its faults.
// Everything it starts is stopped by PID when the test ends, also when it
// fails; the scenario's directory is kept (and its path logged) on failure.
type Cluster struct {
	t      testing.TB
	bin    Binaries
	spec   Spec
	dir    string
	config string
	ledger string
	Redis  *redistest.Cluster
	Proxy  *Proxy // nil unless Spec.ProxyNode >= 0

	mu       sync.Mutex
	replicas map[string]*Replica
	order    []string // replica names in first-start order
	kills    []Kill
	freezes  []Freeze
	legit    []Window
	exitErrs []string
}

// Replica is one `slotlock run` process (the current incarnation of a
// replica name; Restart starts a new process with the same name).
type Replica struct {
	Name   string
	Offset time.Duration // SLOTLOCK_CLOCK_OFFSET
	c      *Cluster
	p      *proc
}

// NewCluster starts the Redis nodes (and proxy) and writes the config.
func NewCluster(t testing.TB, bin Binaries, spec Spec) *Cluster {
	t.Helper()
	if spec.Nodes == 0 {
		spec.Nodes = 3
	}
	if spec.TTL == 0 {
		spec.TTL = 3 * time.Second
	}
	if spec.Skew == 0 {
		spec.Skew = time.Second
	}
	if spec.Grace == 0 {
		spec.Grace = 5 * time.Second
	}
	if spec.OpTimeout == 0 {
		spec.OpTimeout = 100 * time.Millisecond
	}
	name := strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
	dir, err := os.MkdirTemp("", "slotlock-e2e-"+name+"-")
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{t: t, bin: bin, spec: spec, dir: dir,
		config: filepath.Join(dir, "config.yaml"), ledger: filepath.Join(dir, "ledger.jsonl"),
		replicas: map[string]*Replica{}}
	t.Cleanup(func() {
		c.killAll()
		if t.Failed() || os.Getenv("SLOTLOCK_E2E_KEEP") != "" {
			t.Logf("scenario files kept in %s (ledger.jsonl, <replica>.log, config.yaml)", dir)
			return
		}
		_ = os.RemoveAll(dir)
	})
	var opts []redistest.Option
	if spec.AppendOnly {
		opts = append(opts, redistest.AppendOnly())
	}
	rc, err := redistest.New(spec.Nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	c.Redis = rc
	t.Cleanup(func() { _ = rc.Close() })
	addrs := rc.Addrs()
	if spec.ProxyNode >= 0 && spec.ProxyNode < len(addrs) {
		px, err := NewProxy(addrs[spec.ProxyNode])
		if err != nil {
			t.Fatal(err)
		}
		c.Proxy = px
		t.Cleanup(func() { _ = px.Close() })
		addrs[spec.ProxyNode] = px.Addr()
	}
	if err := os.WriteFile(c.config, c.configJSON(addrs), 0o644); err != nil {
		t.Fatal(err)
	}
	return c
}

// configJSON renders the contract's YAML schema as JSON (YAML is a superset
// of JSON, so slotlock reads it as YAML).
func (c *Cluster) configJSON(addrs []string) []byte {
	var nodes []map[string]any
	for _, a := range addrs {
		nodes = append(nodes, map[string]any{"addr": a})
	}
	var jobs []map[string]any
	for _, j := range c.spec.Jobs {
		overlap := "allow"
		if j.Forbid {
			overlap = "forbid"
		}
		policy := j.Misfire
		if policy == "" {
			policy = "skip"
		}
		deadline := j.Deadline
		if deadline == 0 {
			deadline = 10 * time.Minute
		}
		timeout := j.Timeout
		if timeout == 0 {
			timeout = time.Minute
		}
		jobs = append(jobs, map[string]any{
			"name":     j.Name,
			"schedule": j.Schedule,
			"timezone": "UTC",
			"plugin":   "exec",
			"enabled":  true,
			"timeout":  timeout.String(),
			"overlap":  overlap,
			"misfire":  map[string]any{"policy": policy, "deadline": deadline.String()},
			"retry":    map[string]any{"max": 0, "backoff": "1s"},
			"params": map[string]any{
				"command": []string{c.bin.LedgerJob, c.ledger, j.Sleep.String()},
			},
		})
	}
	cfg := map[string]any{
		"log":  map[string]any{"level": "debug", "format": "json"},
		"http": map[string]any{"addr": ""},
		"redis": map[string]any{
			"nodes":        nodes,
			"key_prefix":   "slotlock",
			"dial_timeout": "250ms",
			"op_timeout":   c.spec.OpTimeout.String(),
		},
		"lock":     map[string]any{"ttl": c.spec.TTL.String(), "max_clock_skew": c.spec.Skew.String()},
		"shutdown": map[string]any{"grace": c.spec.Grace.String()},
		"jobs":     jobs,
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		panic(err)
	}
	return b
}

// Dir is the scenario's directory (config, ledger, logs).
func (c *Cluster) Dir() string { return c.dir }

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
	lf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	defer lf.Close()
	before := fileSize(logPath)
	cmd := exec.Command(c.bin.Slotlock, "run", "--config", c.config)
	cmd.Dir = c.dir
	cmd.Stdout, cmd.Stderr = lf, lf
	env := []string{"SLOTLOCK_REPLICA=" + name}
	if offset != 0 {
		env = append(env, "SLOTLOCK_CLOCK_OFFSET="+offset.String())
	}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "SLOTLOCK_") || strings.HasPrefix(kv, "CONTAINER_APP_") {
			continue
		}
		env = append(env, kv)
	}
	cmd.Env = env
	p, err := startProc("replica "+name, cmd)
	if err != nil {
		c.t.Fatalf("start replica %s: %v", name, err)
	}
	r := &Replica{Name: name, Offset: offset, c: c, p: p}
	c.mu.Lock()
	if _, ok := c.replicas[name]; !ok {
		c.order = append(c.order, name)
	}
	c.replicas[name] = r
	c.mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for fileSize(logPath) == before {
		if !p.running() {
			c.t.Fatalf("replica %s exited with %d at start:\n%s", name, p.exitCode(), tail(logPath, 20))
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("replica %s logged nothing within 5s", name)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return r
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

// Kill SIGKILLs the replica and its jobs, and records the kill.
func (r *Replica) Kill() {
	at := time.Now()
	r.p.kill()
	r.c.mu.Lock()
	r.c.kills = append(r.c.kills, Kill{Replica: r.Name, At: at})
	r.c.mu.Unlock()
}

// Freeze SIGSTOPs the replica's process group and its jobs for d, then
// continues them, and records the freeze. It blocks for d.
func (r *Replica) Freeze(d time.Duration) Freeze {
	f := Freeze{Replica: r.Name, From: time.Now()}
	r.p.freeze()
	time.Sleep(d)
	r.p.thaw()
	f.To = time.Now()
	r.c.mu.Lock()
	r.c.freezes = append(r.c.freezes, f)
	r.c.mu.Unlock()
	return f
}

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

// FaultStart is where a fault window opens for a fault injected at t: a
// slot that fired up to the lateness bound (max_clock_skew + 1 s) earlier
// may still be in its acquisition (retrying a missing quorum, or a forbid
// job's lease, while the slot is fresh) on the replica or nodes the fault
// hits, plus half a second of margin.
func (c *Cluster) FaultStart(t time.Time) time.Time {
	return t.Add(-(c.spec.Skew + time.Second + 500*time.Millisecond))
}

// Legit declares that slots in [from, to] may legitimately be missed.
func (c *Cluster) Legit(from, to time.Time, why string) {
	c.mu.Lock()
	c.legit = append(c.legit, Window{From: from, To: to, Why: why})
	c.mu.Unlock()
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

// Runs reads the ledger.
func (c *Cluster) Runs() []Run {
	c.t.Helper()
	runs, err := ReadLedger(c.ledger)
	if err != nil {
		c.t.Fatal(err)
	}
	return runs
}

// Events reads every replica's log.
func (c *Cluster) Events() []Event {
	c.t.Helper()
	paths, _ := filepath.Glob(filepath.Join(c.dir, "*.log"))
	sort.Strings(paths)
	evs, junk, err := ReadEvents(paths...)
	if err != nil {
		c.t.Fatal(err)
	}
	for i, j := range junk {
		if i == 5 {
			c.t.Logf("... %d more non-JSON log lines", len(junk)-5)
			break
		}
		c.t.Logf("non-JSON log line: %s", j)
	}
	return evs
}

// Input assembles the checker's input for expected slots in [from, to].
func (c *Cluster) Input(from, to time.Time) Input {
	var jobs []JobExpect
	for _, j := range c.spec.Jobs {
		jobs = append(jobs, JobExpect{Name: j.Name, Schedule: j.Schedule, Forbid: j.Forbid})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return Input{
		Jobs: jobs, From: from, To: to,
		Legit:   append([]Window(nil), c.legit...),
		Freezes: append([]Freeze(nil), c.freezes...),
		Kills:   append([]Kill(nil), c.kills...),
		Skew:    c.spec.Skew,
		Now:     time.Now(),
	}
}

// Check stops every replica (SIGTERM), then runs the checker over slots in
// [from, to], logs the report and fails the test on any finding or on a
// replica that did not exit 0 within grace.
func (c *Cluster) Check(from, to time.Time) Report {
	c.t.Helper()
	c.StopAll()
	in := c.Input(from, to)
	in.Runs = c.Runs()
	in.Events = c.Events()
	r := Check(in)
	c.t.Logf("%s window %s..%s: %s", c.t.Name(), stamp(from), stamp(to), r)
	for _, w := range in.Legit {
		c.t.Logf("  fault window %s..%s: %s", stamp(w.From), stamp(w.To), w.Why)
	}
	if err := r.Err(); err != nil {
		c.t.Errorf("checker: %v", err)
	}
	c.mu.Lock()
	errs := c.exitErrs
	c.mu.Unlock()
	for _, e := range errs {
		c.t.Errorf("shutdown: %s", e)
	}
	return r
}

// EventsOf filters events by name (and job when job != "").
func EventsOf(evs []Event, event, job string) []Event {
	var out []Event
	for _, e := range evs {
		if e.Event == event && (job == "" || e.Job == job) {
			out = append(out, e)
		}
	}
	return out
}

// SleepUntil sleeps until t.
func SleepUntil(t time.Time) { time.Sleep(time.Until(t)) }

// NextSecond is the first whole second strictly after t.
func NextSecond(t time.Time) time.Time { return t.Truncate(time.Second).Add(time.Second) }

// StartAll starts the named replicas (offset 0) one after the other and
// returns the time the last one was up.
func (c *Cluster) StartAll(names ...string) time.Time {
	c.t.Helper()
	for _, n := range names {
		c.StartReplica(n, 0)
	}
	return time.Now()
}

// WaitOpenRun polls the ledger until a run of job (any job when "") has
// started and not ended on a replica that is running, and returns it.
func (c *Cluster) WaitOpenRun(job string, timeout time.Duration) Run {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		runs, err := ReadLedger(c.ledger)
		if err != nil {
			c.t.Fatal(err)
		}
		for i := len(runs) - 1; i >= 0; i-- {
			r := runs[i]
			if (job == "" || r.Job == job) && r.End.IsZero() {
				if rep := c.Replica(r.Replica); rep != nil && rep.Running() {
					return r
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatalf("no open run of %q within %v", job, timeout)
	return Run{}
}

// Trigger runs `slotlock trigger --config FILE job` as replica "trigger"
// (its log goes to trigger.log, so the checker sees it) and returns its
// exit code.
func (c *Cluster) Trigger(job string) int {
	c.t.Helper()
	lf, err := os.OpenFile(filepath.Join(c.dir, "trigger.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	defer lf.Close()
	cmd := exec.Command(c.bin.Slotlock, "trigger", "--config", c.config, job)
	cmd.Dir = c.dir
	cmd.Stdout, cmd.Stderr = lf, lf
	env := []string{"SLOTLOCK_REPLICA=trigger"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SLOTLOCK_") && !strings.HasPrefix(kv, "CONTAINER_APP_") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	p, err := startProc("trigger "+job, cmd)
	if err != nil {
		c.t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		p.kill()
		c.t.Fatalf("slotlock trigger %s did not finish within a minute", job)
	}
	return p.exitCode()
}
