//go:build linux

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"time"
)

// Rolling a new job file to the replicas (hot reload): each replica's own
// configuration file (Spec.ConfigPerReplica) is rewritten, as a deploy
// tool or an editor does it, and the replica's log tells when it took the
// file in.

// configFor is the configuration file replica name runs with.
func (c *Cluster) configFor(name string) string {
	if !c.spec.ConfigPerReplica {
		return c.config
	}
	p := filepath.Join(c.dir, name+".yaml")
	if _, err := os.Stat(p); os.IsNotExist(err) {
		b, err := os.ReadFile(c.config)
		if err != nil {
			c.t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			c.t.Fatal(err)
		}
	}
	return p
}

// RenderJobs returns the cluster's configuration with jobs in place of the
// spec's.
func (c *Cluster) RenderJobs(jobs []JobDef) []byte {
	c.t.Helper()
	var cfg, fresh map[string]any
	b, err := os.ReadFile(c.config)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		c.t.Fatal(err)
	}
	// The jobs as configJSON renders them, by a cluster of these jobs.
	shadow := &Cluster{spec: c.spec, bin: c.bin, ledger: c.ledger}
	shadow.spec.Jobs = jobs
	if err := json.Unmarshal(shadow.configJSON(nil), &fresh); err != nil {
		c.t.Fatal(err)
	}
	cfg["jobs"] = fresh["jobs"]
	out, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		c.t.Fatal(err)
	}
	return out
}

// Reconfigure replaces replica name's configuration file with data — a
// new file renamed over the old one — and waits until the replica has
// logged one more config.reloaded or config.rejected line; it returns
// that line.
func (c *Cluster) Reconfigure(name string, data []byte) LogLine {
	c.t.Helper()
	path := c.configFor(name)
	before := len(c.LogLines(name, "config.reloaded")) + len(c.LogLines(name, "config.rejected"))
	tmp := path + ".new"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		c.t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		c.t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		lines := append(c.LogLines(name, "config.reloaded"), c.LogLines(name, "config.rejected")...)
		if len(lines) > before {
			latest := lines[0]
			for _, l := range lines {
				if l.Time().After(latest.Time()) {
					latest = l
				}
			}
			return latest
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("replica %s logged no config.reloaded or config.rejected within 10s of its file's change", name)
	return nil
}

// LogLine is one JSON line of a replica's log, every attribute kept.
type LogLine map[string]any

// Time is the line's time.
func (l LogLine) Time() time.Time {
	t, _ := time.Parse(time.RFC3339Nano, str(l["time"]))
	return t
}

// Strings reads an attribute that is a list of strings.
func (l LogLine) Strings(key string) []string {
	var out []string
	list, _ := l[key].([]any)
	for _, v := range list {
		out = append(out, str(v))
	}
	return out
}

// LogLines returns the lines of replica name's log whose event is event.
func (c *Cluster) LogLines(name, event string) []LogLine {
	c.t.Helper()
	b, err := os.ReadFile(filepath.Join(c.dir, name+".log"))
	if err != nil && !os.IsNotExist(err) {
		c.t.Fatal(err)
	}
	var out []LogLine
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var l LogLine
		if json.Unmarshal(sc.Bytes(), &l) == nil && str(l["event"]) == event {
			out = append(out, l)
		}
	}
	return out
}
