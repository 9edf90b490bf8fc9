//go:build linux

package e2e

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"
)

// The scale benchmark's table: one row per point, in the columns of issue
// #13, and a line describing the host it ran on.

// ScalePoint is one configuration the benchmark measures.
type ScalePoint struct {
	Jobs, Replicas, Nodes int
	Overlap               string // forbid | allow
	// Every is the jobs' period in seconds: above 1 each job runs
	// `*/Every * * * * *`, so all the slots come in bursts at the same
	// instants; 0 is 1.
	Every int
	// Shards above 1: every node is a Redis Cluster endpoint of that many
	// masters (scaleshards.go); 0 is 1, a standalone redis-server.
	Shards int
	// Cluster makes a node a Redis Cluster endpoint at 1 shard too.
	Cluster bool
}

func (p ScalePoint) String() string {
	s := fmt.Sprintf("jobs=%d_replicas=%d_nodes=%d_%s", p.Jobs, p.Replicas, p.Nodes, p.Overlap)
	if p.every() > 1 {
		s += fmt.Sprintf("_every=%d", p.every())
	}
	if p.Shards > 1 {
		s += fmt.Sprintf("_shards=%d", p.Shards)
	}
	if p.Cluster {
		s += "_cluster"
	}
	return s
}

func (p ScalePoint) every() int { return max(p.Every, 1) }

// period is the time between two of a job's slots.
func (p ScalePoint) period() time.Duration { return time.Duration(p.every()) * time.Second }

// schedule is every job's cron expression.
func (p ScalePoint) schedule() string {
	if p.every() == 1 {
		return "* * * * * *"
	}
	return fmt.Sprintf("*/%d * * * * *", p.every())
}

// ScaleResult is what one point measured over its window.
type ScaleResult struct {
	ScalePoint
	Tally      SlotTally
	Start, End ScaleSample
	RSS, HWM   int64 // largest replica VmRSS and VmHWM at the window's end
}

// ScaleHeader is the table's header.
const ScaleHeader = "| jobs | replicas × nodes | overlap | slots run / s | every slot once | start delay p50 / p99 | " +
	"CPU per slot, replicas summed (% of a core) | Redis CPU per slot, nodes summed | EVALSHA per slot per node | " +
	"all commands per slot per node | memory per replica, RSS (peak) | log bytes per slot | node unreachable warnings |\n" +
	"|---|---|---|---|---|---|---|---|---|---|---|---|---|"

// Header is the header of the point's table: with bursts, the burst
// columns follow the others.
func (r ScaleResult) Header() string { return headerFor(r.every()) }

func headerFor(every int) string {
	if every <= 1 {
		return ScaleHeader
	}
	head, rule, _ := strings.Cut(ScaleHeader, "\n")
	return head + " " + BurstHeader + " |\n" + rule + strings.Repeat("---|", strings.Count(BurstHeader, "|")+1)
}

// Row is the point's table row.
func (r ScaleResult) Row() string {
	window := r.End.At.Sub(r.Start.At)
	slots := float64(r.Tally.Slots)
	per := func(x float64) float64 {
		if slots == 0 {
			return 0
		}
		return x / slots
	}
	cpu := r.End.ReplicaCPU - r.Start.ReplicaCPU
	redisCPU := r.End.RedisCPU - r.Start.RedisCPU
	evalsha, all := r.callsPerNode()
	cells := []string{
		thousands(r.Jobs),
		r.layout(),
		r.Overlap,
		thousands(int(slots/r.Tally.To.Sub(r.Tally.From).Seconds() + 0.5)),
		r.Tally.Verdict(),
		delayPair(r.Tally.Percentile(50), r.Tally.Percentile(99)),
		fmt.Sprintf("%s (%.1f %%)", cpuPer(time.Duration(per(float64(cpu)))), 100*cpu.Seconds()/window.Seconds()),
		cpuPer(time.Duration(per(float64(redisCPU)))),
		fmt.Sprintf("%.2f", per(evalsha)),
		fmt.Sprintf("%.2f", per(all)),
		fmt.Sprintf("%s (%s)", mib(r.RSS), mib(r.HWM)),
		fmt.Sprintf("%.0f", per(float64(r.End.LogBytes-r.Start.LogBytes))),
		thousands(r.Tally.Unreachable),
	}
	if r.every() > 1 {
		cells = append(cells, r.Tally.Bursts().Cells()...)
	}
	return "| " + strings.Join(cells, " | ") + " |"
}

// layout is "replicas × nodes", and "× shards" with cluster endpoints.
func (r ScaleResult) layout() string {
	if r.Shards > 1 {
		return fmt.Sprintf("%d × %d × %d shards", r.Replicas, r.Nodes, r.Shards)
	}
	if r.Nodes == 0 {
		return fmt.Sprintf("%d × in-process locks", r.Replicas)
	}
	return fmt.Sprintf("%d × %d", r.Replicas, r.Nodes)
}

// callsPerNode is the window's EVALSHA calls and all calls, summed over a
// node's shards and averaged over the nodes.
func (r ScaleResult) callsPerNode() (evalsha, all float64) {
	n := len(r.End.Calls)
	if n == 0 || len(r.Start.Calls) != n {
		return 0, 0
	}
	for i := range n {
		for cmd, d := range r.nodeCalls(i) {
			all += d
			if cmd == "evalsha" {
				evalsha += d
			}
		}
	}
	return evalsha / float64(n), all / float64(n)
}

// nodeCalls is node i's calls in the window per command, summed over its
// shards.
func (r ScaleResult) nodeCalls(i int) map[string]float64 {
	out := map[string]float64{}
	for s, calls := range r.End.Calls[i] {
		for cmd, v := range calls {
			out[cmd] += float64(v - r.Start.Calls[i][s][cmd])
		}
	}
	return out
}

// CommandMix lists the window's calls per slot per node by command, most
// frequent first ("evalsha 7.12, get 10.3, …"): the commands a script runs
// are counted by INFO commandstats too.
func (r ScaleResult) CommandMix() string {
	n := len(r.End.Calls)
	if n == 0 || len(r.Start.Calls) != n || r.Tally.Slots == 0 {
		return ""
	}
	per := map[string]float64{}
	for i := range n {
		for cmd, d := range r.nodeCalls(i) {
			if d > 0 {
				per[cmd] += d / float64(n) / float64(r.Tally.Slots)
			}
		}
	}
	cmds := slices.SortedFunc(maps.Keys(per), func(a, b string) int { return cmp.Compare(per[b], per[a]) })
	var parts []string
	for _, c := range cmds {
		parts = append(parts, fmt.Sprintf("%s %.2f", c, per[c]))
	}
	return strings.Join(parts, ", ")
}

// ScaleTable renders the header and one row per result.
func ScaleTable(rs []ScaleResult) string {
	lines := []string{ScaleHeader}
	if len(rs) > 0 {
		lines[0] = rs[0].Header()
	}
	for _, r := range rs {
		lines = append(lines, r.Row())
	}
	return strings.Join(lines, "\n")
}

func delayPair(p50, p99 float64) string {
	if p99 >= 1000 {
		return fmt.Sprintf("%.1f / %.1f s", p50/1000, p99/1000)
	}
	return fmt.Sprintf("%.0f / %.0f ms", p50, p99)
}

func cpuPer(d time.Duration) string {
	if d < time.Millisecond {
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
	}
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

// HostLine describes the machine: CPUs and model, memory, load average,
// Go and redis-server versions.
func HostLine() string {
	model, mem, load := "?", "?", "?"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	if n, err := procStatusBytesFile("/proc/meminfo", "MemTotal"); err == nil {
		mem = fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			load = strings.Join(f[:3], " ")
		}
	}
	redis := "redis-server ?"
	if out, err := exec.Command("redis-server", "--version").Output(); err == nil {
		if f := strings.Fields(string(out)); len(f) >= 3 {
			redis = "redis-server " + strings.TrimPrefix(f[2], "v=")
		}
	}
	return fmt.Sprintf("host: %d CPUs (%s), %s RAM, load average %s at the start; %s, %s, %s",
		runtime.NumCPU(), model, mem, load, runtime.Version(), redis, runtime.GOOS+"/"+runtime.GOARCH)
}
