//go:build linux

package e2e

import (
	"encoding/json"
	"strconv"
	"time"
)

// What a scenario's cluster runs, and its rendering as slotlock's config.

// Binaries are the programs the suite runs; TestMain builds them once.
type Binaries struct {
	Slotlock  string // go build ./cmd/slotlock
	LedgerJob string // go build ./e2e/internal/ledgerjob
	// Fenced is slotlock with the plugin "fenced" (go build
	// ./e2e/internal/fencedslotlock); a scenario runs it as its replicas
	// by setting Slotlock to it.
	Fenced string
}

// JobDef is one job of a scenario: an exec job running ledgerjob, or a
// log-plugin job when Log is set.
type JobDef struct {
	Name     string
	Schedule string        // 6 fields, UTC
	Sleep    time.Duration // how long each run takes (exec jobs)
	Log      string        // when set: plugin log with params {message: Log}, no ledger line
	Command  []string      // when set: plugin exec running this command, no ledger line
	Exit     int           // when not 0: the ledger job exits with it after Sleep (a failed run)
	// Plugin and Params, when Plugin is set, name another plugin of the
	// replicas' binary that writes the ledger (e2e/internal/fencedjob):
	// its params are Params plus "ledger", the scenario's ledger path.
	Plugin   string
	Params   map[string]any
	Forbid   bool          // overlap: forbid (else allow)
	Misfire  string        // skip (default) | run_once
	Deadline time.Duration // misfire deadline; default 10m
	Timeout  time.Duration // default 1m
	Timezone string        // default UTC
	// Calendar names an entry of Spec.Calendars. The checker expects no
	// slot of such a job (Cluster.Input leaves it out): its scenario
	// checks what the calendar left.
	Calendar string
	// Notify is the job's notify list, as written there.
	Notify []map[string]any
	// Group names an entry of Spec.Groups (a concurrency group).
	Group string
}

// Spec is the cluster a scenario runs on.
type Spec struct {
	Nodes int // Redis nodes; default 3
	// Shards above 1 makes every Redis node a Redis Cluster endpoint of
	// that many masters (Cluster.Shards; the replicas name one seed per
	// node), and so does ClusterMode at 1 shard. Redis is then nil and
	// ProxyNode must be -1.
	Shards      int
	ClusterMode bool
	// Local starts no Redis: the replicas lock in process (redis.nodes
	// empty), which is safe for one replica only. Redis is then nil,
	// ProxyNode must be -1 and Links false.
	Local     bool
	ProxyNode int // index of the node reached through a Proxy; -1 none
	// Links gives every replica a proxy of its own in front of every node
	// (Cluster.Links; after the ProxyNode's proxy, where there is one), so
	// that one replica can be cut from a node its peers still reach: a
	// partition between hosts, not a node's fault.
	Links      bool
	AppendOnly bool
	// SteppableClocks starts the Redis nodes under a clock shim, so that
	// a fault can step a node's wall clock (redistest.Node.StepClock).
	SteppableClocks bool
	TTL             time.Duration // lock.ttl; default 3s
	Skew            time.Duration // lock.max_clock_skew; default 1s
	Grace           time.Duration // shutdown.grace; default 5s
	OpTimeout       time.Duration // redis.op_timeout; default 100ms
	LogLevel        string        // log.level; default debug (the checker reads held/done skips)
	// PipedLogs passes every replica's output through a pipe the suite
	// drains into its log file, so that Replica.StallLogs can stop
	// draining it.
	PipedLogs bool
	// UI gives every replica an ops server on a loopback port of its own
	// (Replica.HTTPAddr) with the status page on (http.ui).
	UI bool
	// ReconcileEvery and ReconcileAfter set history.reconcile_every and
	// history.reconcile_after when not 0.
	ReconcileEvery, ReconcileAfter time.Duration
	Jobs                           []JobDef
	// Calendars is the configuration's calendars list, as written there.
	Calendars []map[string]any
	// Notify is the configuration's notify targets, as written there.
	Notify []map[string]any
	// Groups is the configuration's groups list, as written there.
	Groups []map[string]any
	// ConfigPerReplica gives every replica a configuration file of its own
	// (<name>.yaml, a copy of config.yaml made at its first start), so a
	// new job file can be rolled out one replica at a time (reload.go).
	ConfigPerReplica bool
}

// lateness is the replicas' lateness bound: lock.max_clock_skew + 1 s.
func (s Spec) lateness() time.Duration { return s.Skew + time.Second }

// configJSON renders the contract's YAML schema as JSON, as tools
// generate a configuration (YAML is a superset of JSON; slotlock reads a
// JSON file as its YAML parser would, internal/config/jsonfile.go).
func (c *Cluster) configJSON(addrs []string) []byte {
	nodes := []map[string]any{} // none: in-process locks (Spec.Local)
	for _, a := range addrs {
		nodes = append(nodes, map[string]any{"addr": a})
	}
	var jobs []map[string]any
	for _, j := range c.spec.Jobs {
		jobs = append(jobs, c.jobConfig(j))
	}
	level := c.spec.LogLevel
	if level == "" {
		level = "debug"
	}
	cfg := map[string]any{
		"log":  map[string]any{"level": level, "format": "json"},
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
	if len(c.spec.Calendars) > 0 {
		cfg["calendars"] = c.spec.Calendars
	}
	if len(c.spec.Notify) > 0 {
		cfg["notify"] = c.spec.Notify
	}
	if len(c.spec.Groups) > 0 {
		cfg["groups"] = c.spec.Groups
	}
	if c.spec.UI {
		cfg["http"] = map[string]any{"addr": "", "ui": true} // the address: SLOTLOCK_HTTP__ADDR, one per replica
	}
	if c.spec.ReconcileEvery != 0 || c.spec.ReconcileAfter != 0 {
		h := map[string]any{}
		if c.spec.ReconcileEvery != 0 {
			h["reconcile_every"] = c.spec.ReconcileEvery.String()
		}
		if c.spec.ReconcileAfter != 0 {
			h["reconcile_after"] = c.spec.ReconcileAfter.String()
		}
		cfg["history"] = h
	}
	// Indented, a kept scenario's file reads well; a scale run's
	// thousands of jobs are written compactly (about half the bytes), so
	// that past 10,000 jobs the file still fits the configuration's
	// limit (config.MaxConfigSize).
	marshal := func(v any) ([]byte, error) { return json.MarshalIndent(v, "", "  ") }
	if len(c.spec.Jobs) > 1000 {
		marshal = json.Marshal
	}
	b, err := marshal(cfg)
	if err != nil {
		panic(err)
	}
	return b
}

// jobConfig is job j's entry in the replicas' config.
func (c *Cluster) jobConfig(j JobDef) map[string]any {
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
	plugin, params := "exec", map[string]any{
		"command": []string{c.bin.LedgerJob, c.ledger, j.Sleep.String()},
	}
	if j.Exit != 0 {
		params["command"] = []string{c.bin.LedgerJob, c.ledger, j.Sleep.String(), strconv.Itoa(j.Exit)}
	}
	if j.Log != "" {
		plugin, params = "log", map[string]any{"message": j.Log}
	}
	if j.Command != nil {
		params = map[string]any{"command": j.Command}
	}
	if j.Plugin != "" {
		plugin, params = j.Plugin, map[string]any{"ledger": c.ledger}
		for k, v := range j.Params {
			params[k] = v
		}
	}
	zone := j.Timezone
	if zone == "" {
		zone = "UTC"
	}
	m := map[string]any{
		"name":     j.Name,
		"schedule": j.Schedule,
		"timezone": zone,
		"plugin":   plugin,
		"enabled":  true,
		"timeout":  timeout.String(),
		"overlap":  overlap,
		"misfire":  map[string]any{"policy": policy, "deadline": deadline.String()},
		"retry":    map[string]any{"max": 0, "backoff": "1s"},
		"params":   params,
	}
	if j.Calendar != "" {
		m["calendar"] = j.Calendar
	}
	if len(j.Notify) > 0 {
		m["notify"] = j.Notify
	}
	if j.Group != "" {
		m["group"] = j.Group
	}
	return m
}
