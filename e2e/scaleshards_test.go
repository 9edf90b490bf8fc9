//go:build linux

package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/slotlock/slotlock/locking/redistest"
)

// The scale-out figures from synthetic counters: every job costs 6 calls
// per slot on its node, on the shard its hash tag lands on; the shard of
// the fleet-wide families carries 90 calls more per node. Per shard is
// over every shard of every node; the fleet's weight is what its shard
// carries above its jobs' share; the ratio pairs the same point at 1 and
// 3 shards.
func TestScaleShardFigures(t *testing.T) {
	const jobs, seconds = 300, 10
	tally := SlotTally{Slots: jobs * seconds, From: time.Unix(0, 0), To: time.Unix(seconds, 0)}
	result := func(shards int) ScaleResult {
		r := ScaleResult{ScalePoint: ScalePoint{Jobs: jobs, Replicas: 3, Nodes: 3, Overlap: "forbid", Shards: shards}, Tally: tally}
		for range 3 {
			start, end := make([]map[string]int64, shards), make([]map[string]int64, shards)
			for k := range shards {
				start[k], end[k] = map[string]int64{"evalsha": 1000}, map[string]int64{"evalsha": 1000}
			}
			for i := range jobs {
				end[redistest.ShardOf(scaleJobName(i), shards)]["evalsha"] += 6 * seconds
			}
			end[redistest.ShardOf("_fleet", shards)]["set"] += 90
			r.Start.Calls, r.End.Calls = append(r.Start.Calls, start), append(r.End.Calls, end)
		}
		return r
	}
	one, three := result(1), result(3)
	_, all := three.callsPerNode()
	require.InDelta(t, 6+90.0/(jobs*seconds), all/float64(tally.Slots), 1e-9, "per node: summed over its shards")
	mean, most := three.PerShard()
	require.InDelta(t, (6+90.0/(jobs*seconds))/3, mean, 1e-9)
	fleet := redistest.ShardOf("_fleet", 3)
	var onFleet int
	for i := range jobs {
		if redistest.ShardOf(scaleJobName(i), 3) == fleet {
			onFleet++
		}
	}
	require.InDelta(t, (6*float64(onFleet)*seconds+90)/(jobs*seconds), most, 1e-9, "the largest shard")
	w, share, ok := three.FleetWeight()
	require.True(t, ok)
	require.InDelta(t, 90.0/(jobs*seconds), w, 1e-9, "the fleet shard's excess over its jobs")
	require.InDelta(t, 90.0/(6*jobs*seconds+90), share, 1e-9)
	_, _, ok = one.FleetWeight()
	require.False(t, ok, "one shard: nothing to compare the fleet's shard with")

	table := ShardTable([]ScaleResult{one, three})
	require.Contains(t, table, "{_fleet} on shard")
	require.Contains(t, table, "3 shards ÷ 1: mean 2.01 ÷ 6.03 = 0.33")
	require.Equal(t, strings.Count(ShardHeader[:strings.Index(ShardHeader, "\n")], "|"), strings.Count(three.ShardRow(), "|"))
}
