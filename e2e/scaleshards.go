//go:build linux

package e2e

import (
	"fmt"
	"slices"
	"strings"

	"github.com/slotlock/slotlock/locking/redistest"
	keys "github.com/slotlock/slotlock/scheduler/history"
)

// Scale-out: with -scale.shards every Redis node is a Redis Cluster
// endpoint, and the figure that says whether the work divides by the
// shards is the commands per slot per shard (INFO commandstats of every
// shard), beside the commands per slot per node (summed over its shards).
// A job's keys share one hash tag, so they live on one shard; the
// fleet-wide families (heartbeats, definitions, runs, notifications) are
// hash tags of their own, each on one shard, and their weight is what
// that shard carries above its jobs' share.

// fleetFamilies are the hash tags of the keys every replica shares.
var fleetFamilies = []string{keys.FleetFamily, keys.RunsFamily, keys.DefinitionsFamily, keys.NotifyFamily}

// scaleJobName is the point's i-th job.
func scaleJobName(i int) string { return fmt.Sprintf("s%05d", i) }

// shardCalls is, per node and per shard, the window's calls per slot.
func (r ScaleResult) shardCalls() [][]float64 {
	if len(r.End.Calls) == 0 || len(r.Start.Calls) != len(r.End.Calls) || r.Tally.Slots == 0 {
		return nil
	}
	out := make([][]float64, len(r.End.Calls))
	for i, shards := range r.End.Calls {
		for s, calls := range shards {
			var d float64
			for cmd, v := range calls {
				d += float64(v - r.Start.Calls[i][s][cmd])
			}
			out[i] = append(out[i], d/float64(r.Tally.Slots))
		}
	}
	return out
}

// PerShard is the window's commands per slot per shard: the mean and the
// largest over every shard of every node.
func (r ScaleResult) PerShard() (mean, most float64) {
	var all []float64
	for _, node := range r.shardCalls() {
		all = append(all, node...)
	}
	if len(all) == 0 {
		return 0, 0
	}
	for _, v := range all {
		mean += v
	}
	return mean / float64(len(all)), slices.Max(all)
}

// fleetShards are the shards (of a node of shards shards) that serve a
// fleet-wide family.
func fleetShards(shards int) map[int][]string {
	out := map[int][]string{}
	for _, f := range fleetFamilies {
		k := redistest.ShardOf(f, shards)
		out[k] = append(out[k], f)
	}
	return out
}

// FleetWeight is the commands per slot per node that the shards holding
// the fleet-wide families carry above their jobs' share: each shard's
// calls against the calls per job of the shards without a fleet family,
// averaged over the nodes; share is it over all of a node's commands.
// ok is false without cluster endpoints or without a shard free of
// fleet families to compare with.
func (r ScaleResult) FleetWeight() (perSlot, share float64, ok bool) {
	calls := r.shardCalls()
	if r.Shards < 2 || len(calls) == 0 {
		return 0, 0, false
	}
	jobs := make([]float64, r.Shards)
	for i := range r.Jobs {
		jobs[redistest.ShardOf(scaleJobName(i), r.Shards)]++
	}
	fleet := fleetShards(r.Shards)
	var total float64
	for _, node := range calls {
		var freeCalls, freeJobs float64
		for k, v := range node {
			total += v
			if len(fleet[k]) == 0 {
				freeCalls, freeJobs = freeCalls+v, freeJobs+jobs[k]
			}
		}
		if freeJobs == 0 {
			return 0, 0, false
		}
		perJob := freeCalls / freeJobs
		for k := range fleet {
			perSlot += node[k] - perJob*jobs[k]
		}
	}
	perSlot /= float64(len(calls))
	return perSlot, perSlot * float64(len(calls)) / total, true
}

// ShardHeader is the scale-out table's header.
const ShardHeader = "| jobs | replicas × nodes | shards per node | slots run / s | every slot once | " +
	"all commands per slot per node | per slot per shard: mean | per slot per shard: max | per shard by shard (node 1) | fleet-wide families' excess per slot per node |\n" +
	"|---|---|---|---|---|---|---|---|---|---|"

// ShardRow is the point's row of the scale-out table.
func (r ScaleResult) ShardRow() string {
	_, all := r.callsPerNode()
	slots := float64(r.Tally.Slots)
	mean, most := r.PerShard()
	var byShard []string
	if calls := r.shardCalls(); len(calls) > 0 {
		for _, v := range calls[0] {
			byShard = append(byShard, fmt.Sprintf("%.2f", v))
		}
	}
	fleet := "—"
	if w, share, ok := r.FleetWeight(); ok {
		fleet = fmt.Sprintf("%.2f (%.1f %% of the node's)", w, 100*share)
	}
	return "| " + strings.Join([]string{
		thousands(r.Jobs),
		fmt.Sprintf("%d × %d", r.Replicas, r.Nodes),
		r.shardsCell(),
		thousands(int(slots/r.Tally.To.Sub(r.Tally.From).Seconds() + 0.5)),
		r.Tally.Verdict(),
		fmt.Sprintf("%.2f", all/max(slots, 1)),
		fmt.Sprintf("%.2f", mean),
		fmt.Sprintf("%.2f", most),
		strings.Join(byShard, " / "),
		fleet,
	}, " | ") + " |"
}

// shardsCell is the number of shards per node, and whether one shard is
// a cluster endpoint too.
func (r ScaleResult) shardsCell() string {
	if r.Cluster && r.Shards < 2 {
		return "1 (cluster endpoint)"
	}
	return fmt.Sprintf("%d", max(r.Shards, 1))
}

// ShardTable is the scale-out table, the fleet-wide families' shards, and
// for every point measured at 1 shard and at more, the ratio of their
// commands per slot per shard.
func ShardTable(rs []ScaleResult) string {
	lines := []string{ShardHeader}
	for _, r := range rs {
		lines = append(lines, r.ShardRow())
	}
	seen := map[int]bool{}
	for _, r := range rs {
		if r.Shards > 1 && !seen[r.Shards] {
			seen[r.Shards] = true
			lines = append(lines, "", fmt.Sprintf("fleet-wide families at %d shards per node: %s", r.Shards, fleetLine(r.Shards)))
		}
	}
	for _, r := range rs {
		if r.Shards < 2 {
			continue
		}
		p := r.ScalePoint
		p.Shards = 0
		for _, b := range rs {
			q := b.ScalePoint
			q.Shards = 0
			if b.Shards < 2 && p == q {
				bm, bx := b.PerShard()
				m, x := r.PerShard()
				lines = append(lines, fmt.Sprintf("%s: commands per slot per shard, %d shards ÷ 1: mean %.2f ÷ %.2f = %.2f, max %.2f ÷ %.2f = %.2f",
					r.ScalePoint, r.Shards, m, bm, m/bm, x, bx, x/bx))
			}
		}
	}
	return strings.Join(lines, "\n")
}

// fleetLine names the shard of every fleet-wide family.
func fleetLine(shards int) string {
	var parts []string
	for _, f := range fleetFamilies {
		parts = append(parts, fmt.Sprintf("{%s} on shard %d", f, redistest.ShardOf(f, shards)+1))
	}
	return strings.Join(parts, ", ")
}
