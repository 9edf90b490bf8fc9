//go:build linux

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The scale benchmark's resource readings: the replicas' CPU and memory
// from /proc, each Redis node's command counts and CPU from INFO, and the
// bytes the replicas have logged. A reading is taken at the start and at
// the end of the measured window; the table shows the differences.

// ScaleSample is one reading of the cluster.
type ScaleSample struct {
	At         time.Time
	ReplicaCPU time.Duration        // utime+stime, summed over the running replicas
	RedisCPU   time.Duration        // used_cpu_user+used_cpu_sys, summed over the nodes' shards
	Calls      [][]map[string]int64 // per node, per shard: INFO commandstats calls per command
	LogBytes   int64                // size of every replica log
}

// SampleScale reads the cluster's counters now.
func (c *Cluster) SampleScale() (ScaleSample, error) {
	s := ScaleSample{At: time.Now()}
	for _, n := range c.Running() {
		cpu, err := procCPU(c.Replica(n).PID())
		if err != nil {
			return s, err
		}
		s.ReplicaCPU += cpu
	}
	for _, shards := range c.redisShards() {
		var node []map[string]int64
		for _, n := range shards {
			calls, cpu, err := redisInfo(n.Client().Info(context.Background(), "commandstats", "cpu").Result())
			if err != nil {
				return s, fmt.Errorf("INFO on %s: %w", n.Addr(), err)
			}
			node = append(node, calls)
			s.RedisCPU += cpu
		}
		s.Calls = append(s.Calls, node)
	}
	paths, _ := filepath.Glob(filepath.Join(c.dir, "*.log"))
	for _, p := range paths {
		s.LogBytes += fileSize(p)
	}
	return s, nil
}

// ReplicaMemory returns, over the running replicas, the largest VmRSS and
// the largest VmHWM (peak RSS), in bytes.
func (c *Cluster) ReplicaMemory() (rss, hwm int64, err error) {
	for _, n := range c.Running() {
		pid := c.Replica(n).PID()
		r, err := procStatusBytes(pid, "VmRSS")
		if err != nil {
			return 0, 0, err
		}
		h, err := procStatusBytes(pid, "VmHWM")
		if err != nil {
			return 0, 0, err
		}
		rss, hwm = max(rss, r), max(hwm, h)
	}
	return rss, hwm, nil
}

// redisInfo parses INFO commandstats and cpu: calls per command (without
// info itself, and the connection set-up commands of the reader) and the
// server's CPU time.
func redisInfo(info string, err error) (map[string]int64, time.Duration, error) {
	if err != nil {
		return nil, 0, err
	}
	calls := map[string]int64{}
	var cpu float64
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if name, rest, ok := strings.Cut(line, ":"); ok && strings.HasPrefix(name, "cmdstat_") {
			cmd := strings.TrimPrefix(name, "cmdstat_")
			if cmd == "info" || cmd == "hello" || cmd == "client|setinfo" {
				continue
			}
			for _, kv := range strings.Split(rest, ",") {
				if v, ok := strings.CutPrefix(kv, "calls="); ok {
					n, _ := strconv.ParseInt(v, 10, 64)
					calls[cmd] += n
				}
			}
		}
		for _, k := range []string{"used_cpu_sys:", "used_cpu_user:"} {
			if v, ok := strings.CutPrefix(line, k); ok {
				f, _ := strconv.ParseFloat(v, 64)
				cpu += f
			}
		}
	}
	return calls, time.Duration(cpu * float64(time.Second)), nil
}

// clockTicks is sysconf(_SC_CLK_TCK), from `getconf CLK_TCK` (100 on
// every Linux we know of, the fallback).
var clockTicks = sync.OnceValue(func() int64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64); err == nil && n > 0 {
			return n
		}
	}
	return 100
})

// procCPU is the process's utime+stime from /proc/<pid>/stat (its own
// threads; the log plugin starts no children).
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no comm", pid)
	}
	// After "(comm)": state(3) ppid(4) ... utime(14) stime(15).
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	return time.Duration((ut + st) * int64(time.Second) / clockTicks()), nil
}

// procStatusBytes reads a "Key:  123 kB" line of /proc/<pid>/status.
func procStatusBytes(pid int, key string) (int64, error) {
	return procStatusBytesFile(fmt.Sprintf("/proc/%d/status", pid), key)
}

// procStatusBytesFile reads a "Key:  123 kB" line of a /proc file
// (status, meminfo).
func procStatusBytesFile(path, key string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			f := strings.Fields(v)
			if len(f) == 0 {
				break
			}
			n, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, err
			}
			if len(f) > 1 && f[1] == "kB" {
				n *= 1024
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("%s: no %s", path, key)
}
